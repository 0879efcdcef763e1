// Integration-test helpers for real clairfs mounts (see mount_helpers.h).
#include "tests/mount_helpers.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "tools/cli/control_client.h"

namespace clairfs::testing {

std::map<std::string, std::string> MakeFiles(const std::string& root, int count, size_t max_size,
                                             uint64_t seed) {
  std::map<std::string, std::string> files;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < count; ++i) {
    std::string rel = "d" + std::to_string(i % 3) + "/f" + std::to_string(i) + ".bin";
    files[rel] = RandomBytes(1 + rng() % max_size, seed * 1000 + static_cast<uint64_t>(i));
    WriteFile(root + "/" + rel, files[rel]);
  }
  return files;
}

CommandResult ClairfsMount::Mount(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {ClairfsBin(), "mount", backing_, mountpoint_, "--cache", cache_};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const bool settle_given = std::any_of(extra.begin(), extra.end(), [](const std::string& a) {
    return a.find("stage-settle") != std::string::npos ||
           a.find("stage_settle") != std::string::npos;
  });
  if (!default_settle_ && !settle_given) {
    argv.push_back("--stage-settle");
    argv.push_back("100ms");
  }
  CommandResult r = Run(argv, 300);
  if (r.exit_code == 0) {
    pid_ = Status().value("pid", -1);
    guard_.set_pid(pid_);
  }
  return r;
}

nlohmann::json ClairfsMount::Status() {
  // What `clairfs status --json` prints (its reply less "ok", tools/cmd_status.cc), asked through
  // the CLI's own client in this process: the tests poll it, and a process per poll cost about
  // 0.2 CPU-seconds under ASan, taken from the daemon under test (docs/RELIABILITY.md, "CI").
  auto client = cli::ControlClient::Connect(mountpoint_, 60000);
  if (!client.ok()) return nlohmann::json::object();
  auto reply = client->Call({{"op", "status"}});
  if (!reply.ok()) return nlohmann::json::object();
  reply->erase("ok");
  return *reply;
}

bool ClairfsMount::WaitStagingIdle(int timeout_seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    auto s = Status();
    if (s.contains("staging") && s["staging"].value("queued", 1) == 0 &&
        s["staging"].value("in_flight", 1) == 0) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

CommandResult ClairfsMount::Umount() { return Run({ClairfsBin(), "umount", mountpoint_}, 120); }

std::string ReadFileAndDropPages(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "<open failed>";
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      out = "<read failed: errno " + std::to_string(errno) + ">";
      break;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  return out;
}

std::vector<std::string> ListFilesRecursive(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) {
      out.push_back(it->path().lexically_relative(root).string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace clairfs::testing
