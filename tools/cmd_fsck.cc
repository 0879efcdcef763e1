// `clairfs fsck`: offline check and repair of a cache directory.
//
// Contract: takes the cache's lock (refusing with the holder's pid while a daemon or another tool
// has it), runs the content store's recovery (discard in-flight temp copies, drop index entries
// whose data is missing or of the wrong size, delete data files no entry names) and reports what it
// fixed. With --verify it then compares every staged copy with its backing file byte for byte: a
// copy that differs is evicted and reported; a copy whose backing file is missing or unreadable is
// reported and kept (the daemon drops copies of files gone from a fresh listing itself). fsck
// never creates a cache: a directory without a FORMAT file is refused untouched.
// Exit codes: 0 the cache is consistent (fixes made are fine); 1 verify found mismatches (and
// dropped them), could not check some copies, or something failed; 2 usage error.
// Output: a readable summary on a terminal, one "key value" line per fact otherwise, one JSON
// object with --json. Progress of --verify goes to stderr, on a terminal only.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/backing_tree.h"
#include "cache/cache_dir.h"
#include "cache/cache_opener.h"
#include "cache/content_store.h"
#include "cache/env.h"
#include "cache/eviction_policy.h"
#include "cache/index_db.h"
#include "planner/base/units.h"
#include "tools/cli/cli.h"
#include "tools/commands.h"

namespace clairfs::cli {
namespace {

constexpr char kFsckCommand[] = "fsck";

struct FsckOptions {
  std::string cache;
  bool verify = false;
  std::string backing;
  bool json = false;
};

struct Problem {
  std::string path;
  std::string kind;    // "mismatch", "missing", "unreadable"
  std::string detail;  // what differs or failed
  bool evicted = false;
};

struct VerifyReport {
  uint64_t checked = 0;
  uint64_t equal = 0;
  uint64_t mismatched = 0;
  uint64_t missing = 0;
  uint64_t unreadable = 0;
  uint64_t bytes_compared = 0;
  std::vector<Problem> problems;
};

enum class Verdict { kEqual, kDiffer, kMissing, kUnreadable };

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) (void)Env::Default()->Close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

// Compares the staged copy with the backing file; `detail` says why they are not equal.
// The backing file is opened beneath the root with no link followed (cache/backing_tree.h): fsck
// runs as root over a tree other users may write.
Verdict Compare(const std::string& copy_path, const BackingTree& tree, const std::string& rel,
                uint64_t* compared, std::string* detail) {
  Env* env = Env::Default();
  auto backing = env->OpenBeneath(tree.root_fd(), rel, BackingTree::kFileOpenFlags);
  if (!backing.ok()) {
    *detail = backing.status().message();
    const int code = backing.status().code();
    if (code == ENOENT) return Verdict::kMissing;
    if (code == ELOOP || code == ENOTDIR || code == EXDEV) {
      *detail = "a symbolic link is now on the backing path";
      return Verdict::kDiffer;
    }
    return Verdict::kUnreadable;
  }
  FdCloser close_backing(*backing);
  struct stat bst;
  Status st = env->Fstat(*backing, &bst);
  if (!st.ok()) {
    *detail = st.message();
    return Verdict::kUnreadable;
  }
  if (!S_ISREG(bst.st_mode)) {
    *detail = "the backing path is no longer a regular file";
    return Verdict::kDiffer;
  }
  st = BackingTree::ClearNonBlocking(*backing);
  if (!st.ok()) {
    *detail = st.message();
    return Verdict::kUnreadable;
  }
  auto copy = env->Open(copy_path, O_RDONLY);
  if (!copy.ok()) {
    *detail = "staged copy unreadable: " + copy.status().message();
    return Verdict::kDiffer;
  }
  FdCloser close_copy(*copy);
  struct stat cst;
  st = env->Fstat(*copy, &cst);
  if (!st.ok()) {
    *detail = "staged copy unreadable: " + st.message();
    return Verdict::kDiffer;
  }
  if (cst.st_size != bst.st_size) {
    *detail = "copy has " + std::to_string(cst.st_size) + " bytes, backing file " +
              std::to_string(bst.st_size);
    return Verdict::kDiffer;
  }
  constexpr size_t kChunk = 1 << 20;
  std::vector<char> a(kChunk), b(kChunk);
  uint64_t size = static_cast<uint64_t>(bst.st_size);
  for (uint64_t off = 0; off < size;) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, size - off));
    auto na = env->Pread(*copy, a.data(), want, static_cast<off_t>(off));
    if (!na.ok()) {
      *detail = "staged copy unreadable: " + na.status().message();
      return Verdict::kDiffer;
    }
    auto nb = env->Pread(*backing, b.data(), *na == 0 ? want : *na, static_cast<off_t>(off));
    if (!nb.ok()) {
      *detail = nb.status().message();
      return Verdict::kUnreadable;
    }
    size_t n = std::min(*na, *nb);
    if (n == 0) {
      *detail = "a file shrank while being compared, at byte " + std::to_string(off);
      return Verdict::kDiffer;
    }
    if (std::memcmp(a.data(), b.data(), n) != 0) {
      size_t i = 0;
      while (a[i] == b[i]) ++i;
      *detail = "contents differ from byte " + std::to_string(off + i);
      return Verdict::kDiffer;
    }
    off += n;
    *compared += n;
  }
  return Verdict::kEqual;
}

// Progress on stderr (terminal only): "\rfsck: verified 10/200 copies, 12.0 MiB".
class Progress {
 public:
  explicit Progress(bool on) : on_(on) {}
  void Show(uint64_t done, uint64_t total, uint64_t bytes, bool last = false) {
    if (!on_) return;
    if (last) {
      if (shown_any_) fprintf(stderr, "\r\033[K");  // leave no progress line behind
      fflush(stderr);
      return;
    }
    auto now = std::chrono::steady_clock::now();
    if (now - shown_ < std::chrono::milliseconds(200)) return;
    shown_ = now;
    shown_any_ = true;
    fprintf(stderr, "\rfsck: verified %llu/%llu copies, %s   ",
            static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
            FormatBytes(bytes).c_str());
    fflush(stderr);
  }

 private:
  bool on_;
  bool shown_any_ = false;
  std::chrono::steady_clock::time_point shown_{};
};

Status Verify(ContentStore* store, const std::string& backing_root, bool progress,
              VerifyReport* report) {
  auto tree = BackingTree::Open(backing_root, Env::Default());
  if (!tree.ok()) return tree.status();
  std::vector<std::string> paths = store->Paths();
  std::sort(paths.begin(), paths.end());
  Progress bar(progress);
  for (const std::string& path : paths) {
    auto copy = store->Find(path, /*touch=*/false);
    if (!copy) continue;
    ++report->checked;
    std::string detail;
    Verdict v = Compare(copy->data_path, **tree, path, &report->bytes_compared, &detail);
    switch (v) {
      case Verdict::kEqual:
        ++report->equal;
        break;
      case Verdict::kDiffer: {
        ++report->mismatched;
        Status st = store->Evict(path, /*force=*/true);
        if (!st.ok()) return st.WithContext("evict mismatching copy of " + path);
        report->problems.push_back(Problem{path, "mismatch", detail, true});
        break;
      }
      case Verdict::kMissing:
        ++report->missing;
        report->problems.push_back(Problem{path, "missing", "no backing file", false});
        break;
      case Verdict::kUnreadable:
        ++report->unreadable;
        report->problems.push_back(Problem{path, "unreadable", detail, false});
        break;
    }
    bar.Show(report->checked, paths.size(), report->bytes_compared);
  }
  bar.Show(report->checked, paths.size(), report->bytes_compared, /*last=*/true);
  return Status::Ok();
}

std::string Plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

void PrintHuman(const FsckOptions& o, const RecoveryReport& r, const ContentStoreStats& after,
                const VerifyReport* v, bool consistent) {
  printf("clairfs fsck: cache %s %s\n", o.cache.c_str(),
         consistent ? "is consistent" : "has problems (see below)");
  printf("  kept        %s (%s)\n", Plural(after.files, "copy", "copies").c_str(),
         FormatBytes(after.used_bytes).c_str());
  printf("  discarded   %s\n",
         Plural(r.temp_removed, "in-flight temp copy", "in-flight temp copies").c_str());
  printf("  dropped     %s\n", Plural(r.entries_dropped, "index entry without complete data",
                                      "index entries without complete data")
                                   .c_str());
  printf("  removed     %s\n",
         Plural(r.orphans_removed, "orphan data file", "orphan data files").c_str());
  if (v != nullptr) {
    printf(
        "  verified    %s against %s (%s compared): %llu equal, %llu mismatched (evicted), "
        "%llu backing missing, %llu unreadable (kept)\n",
        Plural(v->checked, "copy", "copies").c_str(), o.backing.c_str(),
        FormatBytes(v->bytes_compared).c_str(), static_cast<unsigned long long>(v->equal),
        static_cast<unsigned long long>(v->mismatched), static_cast<unsigned long long>(v->missing),
        static_cast<unsigned long long>(v->unreadable));
    for (const auto& p : v->problems) {
      printf("    %-10s  %s: %s (%s)\n", p.kind.c_str(), p.path.c_str(), p.detail.c_str(),
             p.evicted ? "copy evicted" : "copy kept");
    }
  }
}

void PrintPlain(const FsckOptions& o, const RecoveryReport& r, const ContentStoreStats& after,
                const VerifyReport* v, bool consistent) {
  printf("cache %s\n", o.cache.c_str());
  printf("entries_kept %llu\n", static_cast<unsigned long long>(after.files));
  printf("bytes_kept %llu\n", static_cast<unsigned long long>(after.used_bytes));
  printf("temp_removed %llu\n", static_cast<unsigned long long>(r.temp_removed));
  printf("entries_dropped %llu\n", static_cast<unsigned long long>(r.entries_dropped));
  printf("orphans_removed %llu\n", static_cast<unsigned long long>(r.orphans_removed));
  if (v != nullptr) {
    printf("verified %llu\n", static_cast<unsigned long long>(v->checked));
    printf("equal %llu\n", static_cast<unsigned long long>(v->equal));
    printf("mismatched %llu\n", static_cast<unsigned long long>(v->mismatched));
    printf("missing %llu\n", static_cast<unsigned long long>(v->missing));
    printf("unreadable %llu\n", static_cast<unsigned long long>(v->unreadable));
    for (const auto& p : v->problems) {
      printf("%s %s: %s (%s)\n", p.kind.c_str(), p.path.c_str(), p.detail.c_str(),
             p.evicted ? "copy evicted" : "copy kept");
    }
  }
  printf("result %s\n", consistent ? "consistent" : "problems");
}

void PrintJson(const FsckOptions& o, const RecoveryReport& r, const ContentStoreStats& after,
               const VerifyReport* v, bool consistent, int exit_code) {
  nlohmann::json j;
  j["cache"] = o.cache;
  j["consistent"] = consistent;
  j["exit_code"] = exit_code;
  j["recovery"] = {{"entries_kept", after.files},
                   {"bytes_kept", after.used_bytes},
                   {"temp_removed", r.temp_removed},
                   {"entries_dropped", r.entries_dropped},
                   {"orphans_removed", r.orphans_removed}};
  if (v != nullptr) {
    nlohmann::json problems = nlohmann::json::array();
    for (const auto& p : v->problems) {
      problems.push_back(
          {{"path", p.path}, {"kind", p.kind}, {"detail", p.detail}, {"evicted", p.evicted}});
    }
    j["verify"] = {{"backing", o.backing},
                   {"checked", v->checked},
                   {"equal", v->equal},
                   {"mismatched", v->mismatched},
                   {"missing", v->missing},
                   {"unreadable", v->unreadable},
                   {"bytes_compared", v->bytes_compared},
                   {"problems", problems}};
  } else {
    j["verify"] = nullptr;
  }
  // Paths are bytes, not necessarily UTF-8: replace what JSON cannot carry rather than throw.
  printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

int FailWith(const FsckOptions& o, const Status& st) {
  int code = Fail(kFsckCommand, st);
  if (o.json) {
    nlohmann::json j = {{"cache", o.cache}, {"error", st.message()}, {"exit_code", code}};
    printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return code;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return Env::Default()->Lstat(path, &st).ok() && S_ISDIR(st.st_mode);
}

int RunFsck(FsckOptions o) {
  while (o.cache.size() > 1 && o.cache.back() == '/') o.cache.pop_back();
  while (o.backing.size() > 1 && o.backing.back() == '/') o.backing.pop_back();
  if (o.verify && o.backing.empty()) {
    return UsageError(kFsckCommand, "--verify needs --backing DIR (the backing root of the mount)");
  }
  if (!o.verify && !o.backing.empty()) {
    return UsageError(kFsckCommand, "--backing is only used with --verify");
  }
  if (o.verify && !IsDirectory(o.backing)) {
    return UsageError(kFsckCommand, "--backing " + o.backing + " is not a directory");
  }
  Env* env = Env::Default();
  struct stat st;
  Status exists = env->Lstat(o.cache, &st);
  if (!exists.ok()) return FailWith(o, exists.WithContext("--cache"));
  Status format = env->Lstat(o.cache + "/FORMAT", &st);
  if (format.code() == ENOENT) {
    return FailWith(o, Status::Error(ENOENT, o.cache + " is not a clairfs cache (no FORMAT file); "
                                                       "nothing was checked or changed"));
  }
  if (!format.ok()) {
    // A cache is private to its daemon's user (0700): someone else cannot even look inside.
    std::string why = format.message();
    if (format.code() == EACCES) why += " (run fsck as the cache's owner or root)";
    return FailWith(o, Status::Error(format.code(), "--cache: " + why));
  }
  // Opened as the mount daemon opens it (cache/cache_opener.h), with no manifest and no capacity:
  // fsck does not know the mount's --capacity and must not evict for it.
  CacheOpenOptions open;
  open.cache_dir = o.cache;
  auto opened = OpenCache(std::move(open), env);
  if (!opened.ok()) return FailWith(o, opened.status().WithContext("recovery"));
  ContentStore* store = opened->store.get();
  RecoveryReport recovery = store->recovery();

  VerifyReport verify;
  if (o.verify) {
    bool progress = !o.json && StderrIsTerminal();
    Status vst = Verify(store, o.backing, progress, &verify);
    if (!vst.ok()) return FailWith(o, vst);
  }
  ContentStoreStats after = store->stats();
  bool consistent = verify.mismatched == 0 && verify.missing == 0 && verify.unreadable == 0;
  int code = consistent ? kExitOk : kExitFailed;
  const VerifyReport* v = o.verify ? &verify : nullptr;
  if (o.json) {
    PrintJson(o, recovery, after, v, consistent, code);
  } else if (isatty(STDOUT_FILENO) == 1) {
    PrintHuman(o, recovery, after, v, consistent);
  } else {
    PrintPlain(o, recovery, after, v, consistent);
  }
  fflush(stdout);
  return code;
}

}  // namespace

void RegisterFsck(CLI::App& app) {
  auto options = std::make_shared<FsckOptions>();
  CLI::App* cmd =
      AddCommand(&app, "fsck",
                 "Check and repair a cache directory offline (the mount must not be running).\n"
                 "Discards in-flight temp copies, drops index entries whose data is missing or\n"
                 "of the wrong size, deletes data files no entry names, and reports each fix.\n"
                 "With --verify, also compares every staged copy with its backing file byte for\n"
                 "byte: a copy that differs is evicted; one whose backing file is missing or\n"
                 "unreadable is reported and kept.");
  cmd->add_option("--cache", options->cache, "The cache directory (the mount's --cache)")
      ->required()
      ->type_name("DIR");
  cmd->add_flag("--verify", options->verify,
                "Compare every staged copy with its backing file (reads both in full)");
  cmd->add_option("--backing", options->backing,
                  "The backing root the copies came from (required with --verify)")
      ->type_name("DIR");
  cmd->add_flag("--json", options->json, "Print one JSON object on stdout (for scripts)");
  cmd->footer(
      "Exit status: 0 the cache is consistent (repairs made are fine); 1 --verify found\n"
      "mismatching copies (evicted) or could not check some, or fsck failed (e.g. the\n"
      "cache is in use: stop the mount first); 2 usage error.\n"
      "Output: a summary on a terminal, 'key value' lines otherwise, JSON with --json.\n"
      "Example: clairfs fsck --cache /nvme/clairfs --verify --backing /lustre/imagenet");
  cmd->callback([options] { SetExitCode(RunFsck(*options)); });
}

}  // namespace clairfs::cli
