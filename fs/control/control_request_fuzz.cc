// libFuzzer target for the control protocol (fs/control/control_server.h), built with
// -DCLAIRFS_FUZZ=ON and run by .ci/fuzz. The server is the daemon's: every handler the daemon
// registers (control_handlers.h), over a real cache (index, manifest, heat, content store, stager,
// plan runtime) in a temporary directory whose backing tree holds names of hostile bytes, on an
// allow_other mount, so requests of other users take the "through the mount" paths. No socket:
// requests go to ControlServer::HandleLine, as the client threads hand them over.
//
// The first input byte chooses the caller (root, who owns the mount, or another uid with a
// supplementary group) and the form of the rest:
//   - even: raw bytes, cut into lines at '\n' as a client's stream is;
//   - odd: up to four structurally valid JSON requests, each of a registered op, with the op's
//     fields (now and then an unknown one) holding values of any JSON type: names of the backing
//     tree raw and escaped, specs, numbers at their limits, nested arrays and objects.
// Properties of every reply: one line (exactly one '\n', at the end) of valid UTF-8 that parses as
// a JSON object with a boolean "ok"; a failure carries errno > 0 and a non-empty "error"; another
// uid asking for an op other than ls, status, stats and heat_status gets EPERM (or EINVAL for a
// field the op does not take, which is checked first); every "path" in a reply is a string
// UnescapeName takes back. No exception leaves HandleLine (it is noexcept: one would abort), and
// ASan/UBSan watch the handlers.
// Between inputs, root clears the plan and evicts everything, so each input starts near the same
// state (staging runs on the stager's threads, so not exactly: a crash may need a few runs).
#include <fuzzer/FuzzedDataProvider.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/backing_tree.h"
#include "cache/cache_opener.h"
#include "cache/heat_policy.h"
#include "cache/stager.h"
#include "fs/control/control_handlers.h"
#include "fs/control/control_server.h"
#include "fs/filesystem.h"
#include "fs/prefetch/plan_runtime.h"
#include "planner/base/log.h"
#include "planner/base/name_escape.h"

namespace {

using namespace clairfs;
using nlohmann::json;

constexpr uid_t kOtherUid = 4242;
constexpr gid_t kOtherGroup = 4100;

// The backing tree: names of any bytes, a private directory, an image folder for plans.
const std::vector<std::string> kFiles = {"plain.bin",       "bad_\xff\xfe.bin", "new\nline",
                                         "back\\slash",     "d/inner #1.bin",   "cls_a/img0.JPEG",
                                         "cls_a/img1.JPEG", "cls_b/img2.JPEG",  "secret/s.bin",
                                         "d_\xc3/x.bin",    "quote\"and'.bin",  "tab\there.bin"};

// The daemon's stack, as fs/daemon/daemon.cc builds it, without FUSE. Never destroyed: the
// fuzzer exits with it running (its directory is removed at exit).
struct Stack {
  std::string dir, backing, mountpoint, list_file;
  OpenedCache cache;
  HeatPolicy* heat_policy = nullptr;
  std::unique_ptr<Stager> stager;
  std::unique_ptr<FileSystem> fs;
  std::unique_ptr<PlanRuntime> plan;
  std::unique_ptr<ControlServer> server;
  std::map<std::string, std::vector<std::string>> ops;
};

Stack* stack = nullptr;

void Fail(const std::string& what) {
  std::fprintf(stderr, "control_request_fuzz setup: %s\n", what.c_str());
  std::abort();
}

void RemoveDir() {
  if (stack != nullptr) {
    std::error_code ignored;
    std::filesystem::remove_all(stack->dir, ignored);
  }
}

void Write(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << data;
}

void BuildStack() {
  stack = new Stack();
  std::string templ = std::filesystem::temp_directory_path() / "clairfs-control-fuzz-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) Fail("mkdtemp");
  stack->dir = templ;
  std::atexit(RemoveDir);
  stack->backing = stack->dir + "/back";
  stack->mountpoint = stack->dir + "/mnt";
  stack->list_file = stack->dir + "/plan.list";
  for (size_t i = 0; i < kFiles.size(); ++i) {
    Write(stack->backing + "/" + kFiles[i], std::string(100 * (i + 1), static_cast<char>('a' + i)));
  }
  chmod((stack->backing + "/secret").c_str(), 0700);
  chmod((stack->backing + "/d").c_str(), 0711);
  std::filesystem::create_directories(stack->mountpoint);
  Write(stack->list_file,
        "# epoch 0\n# rank 0\nplain.bin\nd/inner #1.bin\n# rank 1\nsecret/s.bin\n");

  Env* env = Env::Default();
  auto backing = BackingTree::Open(stack->backing, env);
  if (!backing.ok()) Fail(backing.status().message());
  CacheOpenOptions open;
  open.cache_dir = stack->dir + "/cache";
  open.listing = ManifestListing::kRescan;
  open.backing = *backing;
  open.scan_threads = 2;
  open.open_heat = true;
  open.store_options = ContentStoreOptions{64 << 10, 0, nullptr};  // room for a few files
  open.make_policy = [](HeatStore* heat) -> std::unique_ptr<EvictionPolicy> {
    auto policy = std::make_unique<HeatPolicy>();
    policy->SetHeat(heat->snapshot());
    stack->heat_policy = policy.get();
    return policy;
  };
  auto opened = OpenCache(std::move(open), env);
  if (!opened.ok()) Fail(opened.status().message());
  stack->cache = std::move(*opened);
  StagerOptions stager_options;
  stager_options.backing_root = stack->backing;
  stager_options.backing = *backing;
  stager_options.threads = 2;
  stack->stager = std::make_unique<Stager>(stager_options, stack->cache.store.get(), env);
  FileSystemConfig fs_config{stack->backing, *backing, Revalidate::kNever, true};
  stack->fs = std::make_unique<FileSystem>(fs_config, stack->cache.manifest.get(),
                                           stack->cache.store.get(), stack->stager.get(), env);
  PlanRuntimeDeps plan_deps;
  plan_deps.store = stack->cache.store.get();
  plan_deps.stager = stack->stager.get();
  plan_deps.manifest = stack->cache.manifest.get();
  plan_deps.backing_root = stack->backing;
  plan_deps.env = env;
  HeatPolicy* heat_policy = stack->heat_policy;
  plan_deps.on_plan_active = [heat_policy](bool active) { heat_policy->SetEnabled(!active); };
  stack->plan = std::make_unique<PlanRuntime>(plan_deps);
  stack->fs->set_open_observer(stack->plan.get());
  stack->plan->Start();

  stack->server = std::make_unique<ControlServer>(stack->dir + "/control.sock", getuid());
  StatusSources status;
  status.allow_other = true;
  status.backing = stack->backing;
  status.mountpoint = stack->mountpoint;
  status.cache = stack->dir + "/cache";
  status.manifest = stack->cache.manifest.get();
  status.store = stack->cache.store.get();
  status.stager = stack->stager.get();
  status.fs = stack->fs.get();
  status.started = std::chrono::steady_clock::now();
  PlanRuntime* plan = stack->plan.get();
  status.plan = [plan] { return plan->StatusJson(); };
  status.heat = stack->cache.heat.get();
  AdminSources admin{stack->mountpoint,        stack->cache.manifest.get(),
                     stack->cache.store.get(), stack->stager.get(),
                     stack->cache.heat.get(),  [plan] { return plan->Active(); }};
  admin.owner_uid = getuid();
  admin.allow_other = true;
  HeatStore* heat = stack->cache.heat.get();
  HeatSources heat_sources{stack->cache.manifest.get(), heat,
                           [heat, heat_policy] { heat_policy->SetHeat(heat->snapshot()); }};
  RegisterControlHandlers(stack->server.get(),
                          ControlSources{status, plan, std::move(admin), std::move(heat_sources)});
  stack->ops = stack->server->Ops();
}

bool OpenToEveryone(const std::string& op) {
  return op == "ls" || op == "status" || op == "stats" || op == "heat_status";
}

// True if every "path" in `value` is a string that UnescapeName takes.
bool PathsUnescape(const json& value) {
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (it.key() == "path" && (!it->is_string() || !UnescapeName(it->get<std::string>()).ok())) {
        return false;
      }
      if (!PathsUnescape(*it)) return false;
    }
  } else if (value.is_array()) {
    for (const json& item : value) {
      if (!PathsUnescape(item)) return false;
    }
  }
  return true;
}

// A broken property: says which, with the request and the reply (escaped), and stops.
[[noreturn]] void Broken(const char* property, const std::string& line, const std::string& reply) {
  std::fprintf(stderr, "control_request_fuzz: %s\n  request: %s\n  reply: %s\n", property,
               SanitizeText(line.substr(0, 2000)).c_str(),
               SanitizeText(reply.substr(0, 2000)).c_str());
  __builtin_trap();
}

// Sends one line as `peer` and checks the reply. `op` is the request's op when known.
void Ask(const std::string& line, const PeerCredentials& peer, const std::string& op = "") {
  const std::string reply = stack->server->HandleLine(line, peer);
  if (reply.empty() || reply.back() != '\n' || reply.find('\n') != reply.size() - 1) {
    Broken("the reply is not one line", line, reply);
  }
  if (!IsValidUtf8(reply)) Broken("the reply is not UTF-8", line, reply);
  const json parsed = json::parse(reply, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) Broken("the reply is no object", line, reply);
  auto ok = parsed.find("ok");
  if (ok == parsed.end() || !ok->is_boolean()) Broken("the reply has no ok", line, reply);
  if (!ok->get<bool>()) {
    auto code = parsed.find("errno");
    auto error = parsed.find("error");
    if (code == parsed.end() || !code->is_number_integer() || code->get<int64_t>() <= 0 ||
        error == parsed.end() || !error->is_string() || error->get<std::string>().empty()) {
      Broken("an error reply without errno or message", line, reply);
    }
  }
  if (!op.empty() && peer.uid == kOtherUid && !OpenToEveryone(op) && stack->ops.count(op) != 0) {
    // Refused as not theirs, or as malformed before that (a field the op does not take).
    const bool refused = parsed.value("errno", 0) == EPERM ||
                         (parsed.value("errno", 0) == EINVAL &&
                          parsed.value("error", "").rfind("unknown field", 0) == 0);
    if (ok->get<bool>() || !refused)
      Broken("another uid ran an op only the owner may", line, reply);
  }
  if (!PathsUnescape(parsed)) Broken("a path in the reply does not unescape", line, reply);
}

std::string AnyName(FuzzedDataProvider* in) {
  const std::string& raw = kFiles[in->ConsumeIntegralInRange<size_t>(0, kFiles.size() - 1)];
  switch (in->ConsumeIntegralInRange(0, 5)) {
    case 0:
      return raw;
    case 1:
      return stack->mountpoint + "/" + EscapeName(raw);
    case 2:
      return EscapeName(raw.substr(0, raw.find('/')));  // a directory, or the file
    case 3:
      return in->PickValueInArray({".", "..", "/", "", "d/..", "./plain.bin", "secret", "\\", "\\x",
                                   "\\xzz", "no/such/file"});
    default:
      return EscapeName(raw);
  }
}

std::string AnyString(FuzzedDataProvider* in) {
  switch (in->ConsumeIntegralInRange(0, 4)) {
    case 0:
      return AnyName(in);
    case 1:
      return in->PickValueInArray(
          {"all", "staged", "unstaged", "high", "normal", "low", "sorted", "imagefolder",
           "list:plan.list", "torch-distributed:seed=42,world=2", "sequential",
           "numpy:seed=7,epochs=3", "list:/dev/zero", "cls_a", "d", "/", "-1"});
    case 2:
      return "list:" + stack->list_file;
    default:
      return in->ConsumeRandomLengthString(64);
  }
}

json AnyValue(FuzzedDataProvider* in, int depth) {
  switch (in->ConsumeIntegralInRange(0, depth > 2 ? 6 : 8)) {
    case 0:
      return nullptr;
    case 1:
      return in->ConsumeBool();
    case 2:
      return in->ConsumeIntegral<int64_t>();
    case 3:
      return in->PickValueInArray<uint64_t>(
          {0, 1, 2, 64, 65536, 65537, std::numeric_limits<uint64_t>::max(), uint64_t{1} << 63});
    case 4:
      return in->ConsumeFloatingPoint<double>();
    case 5:
    case 6:
      return AnyString(in);
    case 7: {
      json array = json::array();
      const int n = in->ConsumeIntegralInRange(0, 4);
      for (int i = 0; i < n; ++i) array.push_back(AnyValue(in, depth + 1));
      return array;
    }
    default: {
      json object = json::object();
      const int n = in->ConsumeIntegralInRange(0, 3);
      for (int i = 0; i < n; ++i)
        object[in->ConsumeRandomLengthString(8)] = AnyValue(in, depth + 1);
      return object;
    }
  }
}

void AskStructured(FuzzedDataProvider* in, const PeerCredentials& peer) {
  std::vector<std::string> names;
  for (const auto& [op, fields] : stack->ops) names.push_back(op);
  const int requests = in->ConsumeIntegralInRange(1, 4);
  for (int r = 0; r < requests && in->remaining_bytes() > 0; ++r) {
    const std::string op = names[in->ConsumeIntegralInRange<size_t>(0, names.size() - 1)];
    json request = {{"op", op}};
    for (const std::string& field : stack->ops[op]) {
      if (in->ConsumeBool()) request[field] = AnyValue(in, 0);
    }
    if (in->ConsumeIntegralInRange(0, 15) == 0) request[in->ConsumeRandomLengthString(8)] = 1;
    Ask(request.dump(-1, ' ', false, json::error_handler_t::replace), peer, op);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  SetLogLevel(LogLevel::kError);  // refusals are expected; errors still show
  BuildStack();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const PeerCredentials root{1, 0, 0, {}};
  const PeerCredentials other{2, kOtherUid, kOtherUid, {kOtherGroup}};
  const PeerCredentials& peer = (data[0] & 2) != 0 ? other : root;
  if ((data[0] & 1) == 0) {
    const std::string stream(reinterpret_cast<const char*>(data) + 1, size - 1);
    size_t start = 0;
    while (start <= stream.size()) {
      size_t end = stream.find('\n', start);
      if (end == std::string::npos) end = stream.size();
      Ask(stream.substr(start, end - start), peer);
      start = end + 1;
    }
  } else {
    FuzzedDataProvider in(data + 1, size - 1);
    AskStructured(&in, peer);
  }
  Ask("{\"op\":\"plan_clear\"}", root, "plan_clear");
  Ask("{\"op\":\"evict\",\"all\":true,\"force\":true}", root, "evict");
  return 0;
}
