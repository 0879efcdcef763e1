// Checks the planner against the real libraries: torch 1.13 (DistributedSampler, DataLoader
// with a seeded generator, with and without persistent workers), torchvision 0.14 (ImageFolder)
// and numpy 1.24 (RandomState, default_rng), all run in ONE /usr/bin/python3 process.
//
// The test builds adversarial trees (spaces, dots, dashes, unicode and non-UTF-8 names, nested
// directories inside classes, symlinked classes, files and directories, broken and escaping
// links, non-image files, upper-case extensions), writes a Python oracle script and a JSON list
// of cases, and compares the oracle's answers with `clairfs plan show` (most cases) and with the
// C++ Plan API (large datasets, epochs asked out of order). Without /usr/bin/python3 or the
// libraries the test is skipped, except under CI=true where that is a failure.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "planner/base/name_escape.h"
#include "planner/plan.h"
#include "planner/plan_spec.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::ClairfsBin;
using testing::CommandResult;
using testing::InCi;
using testing::MakeDirs;

using testing::TempDir;
using testing::WriteFile;

// /usr/bin/python3 (the Debian interpreter with python3-torch etc.); CLAIRFS_TEST_PYTHON
// overrides it, e.g. to check the skip/fail path.
std::string PythonPath() {
  const char* override_path = getenv("CLAIRFS_TEST_PYTHON");
  return override_path != nullptr && *override_path ? override_path : "/usr/bin/python3";
}

constexpr const char* kOracleScript =
    R"PY(# Oracle for tests/plan_vs_python_test.cc: computes sample orders with the real libraries
# (torch, torchvision, numpy) for a JSON list of cases. Run with /usr/bin/python3.
# Input: argv[1] = JSON file {"trees": [...], "cases": [...]}. Output (stdout): JSON
# {"trees": {id: {"paths": [hex], "escapes": [bool]}}, "cases": [{"epochs": {e: [indices]}}]}.
# Paths are hex-encoded bytes relative to the backing root so that names that are not valid
# UTF-8 survive the trip.
import json
import os
import sys

import numpy as np
import torch
import torchvision
from torch.utils.data import DataLoader, DistributedSampler


def imagefolder_paths(root, layout_root):
    top = os.path.join(root, layout_root) if layout_root else root
    dataset = torchvision.datasets.ImageFolder(top, loader=lambda p: p)
    return [p for p, _ in dataset.samples]


def sorted_paths(root, layout_root):
    top = os.path.join(root, layout_root) if layout_root else root
    real_root = os.path.realpath(root)
    out = []
    for dirpath, _, files in os.walk(top, followlinks=True):
        for f in files:
            p = os.path.join(dirpath, f)
            real = os.path.realpath(p)
            inside = real == real_root or real.startswith(real_root + "/")
            if os.path.isfile(p) and inside:
                out.append(p)
    return sorted(out, key=lambda p: os.fsencode(os.path.relpath(p, root)))


def tree_result(tree):
    root = tree["root"]
    if tree["layout"] == "imagefolder":
        paths = imagefolder_paths(root, tree.get("layout_root", ""))
    else:
        paths = sorted_paths(root, tree.get("layout_root", ""))
    real_root = os.path.realpath(root)
    rel, escapes = [], []
    for p in paths:
        rel.append(os.fsencode(os.path.relpath(p, root)).hex())
        real = os.path.realpath(p)
        escapes.append(not (real == real_root or real.startswith(real_root + "/")))
    return {"paths": rel, "escapes": escapes}


def case_result(case, trees):
    n = len(trees[case["tree"]]["paths"]) if case["tree"] else case["n"]
    kind, epochs = case["kind"], case["epochs"]
    out = {}
    if kind == "torch-distributed":
        sampler = DistributedSampler(range(n), num_replicas=case["world"], rank=case["rank"],
                                     shuffle=bool(case["shuffle"]), seed=int(case["seed"]),
                                     drop_last=bool(case["drop_last"]))
        for e in epochs:
            sampler.set_epoch(e)
            out[e] = list(sampler)
    elif kind == "torch-random":
        g = torch.Generator()
        g.manual_seed(int(case["seed"]))
        persistent = bool(case["persistent_workers"])
        loader = DataLoader(range(n), batch_size=case["batch_size"], shuffle=True, generator=g,
                            num_workers=1 if persistent else 0, persistent_workers=persistent)
        for e in range(max(epochs) + 1):
            order = [int(x) for batch in loader for x in batch]
            if e in epochs:
                out[e] = order
    elif kind == "numpy":
        if case["reseed"] == "epoch":
            for e in epochs:
                out[e] = np.random.RandomState(int(case["seed"]) + e).permutation(n).tolist()
        else:
            rs = np.random.RandomState(int(case["seed"]))
            for e in range(max(epochs) + 1):
                order = rs.permutation(n).tolist()
                if e in epochs:
                    out[e] = order
    elif kind == "numpy-rng":
        rng = np.random.default_rng(int(case["seed"]))
        for e in range(max(epochs) + 1):
            order = rng.permutation(n).tolist()
            if e in epochs:
                out[e] = order
    elif kind == "sequential":
        for e in epochs:
            out[e] = list(range(n))
    return {"epochs": {str(e): v for e, v in out.items()}}


def main():
    with open(sys.argv[1]) as f:
        request = json.load(f)
    trees = {t["id"]: tree_result(t) for t in request["trees"]}
    cases = [case_result(c, trees) for c in request["cases"]]
    json.dump({"trees": trees, "cases": cases}, sys.stdout)


if __name__ == "__main__":
    main()
)PY";

// Empty if the oracle can run, else why not.
std::string OracleUnavailable() {
  if (access(PythonPath().c_str(), X_OK) != 0) return PythonPath() + " not found";
  CommandResult probe = testing::Run(
      {PythonPath(), "-c", "import torch, torchvision, numpy; print(torch.__version__)"}, 120);
  if (probe.exit_code != 0) {
    return "torch/torchvision/numpy not importable by " + PythonPath() + ": " + probe.err;
  }
  return "";
}

void Symlink(const std::string& target, const std::string& link) {
  MakeDirs(link.substr(0, link.rfind('/')));
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0) << link;
}

std::string HexDecode(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// A small deterministic generator for choosing case parameters (test code only).
struct Picker {
  uint64_t state;
  uint64_t Next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  }
  template <typename T>
  const T& From(const std::vector<T>& values) {
    return values[Next() % values.size()];
  }
};

// The adversarial ImageFolder tree; `outside` is a directory outside the backing root.
void BuildAdversarialTree(const std::string& root, const std::string& outside) {
  for (int i = 0; i < 10; ++i) WriteFile(root + "/cat/" + std::to_string(i) + ".jpg", "x");
  for (const char* name : {"a b.jpg", "a-b.JPG", "a.b.png", "\xc3\xbcn\xc3\xaf.jpeg", ".hidden.jpg",
                           "x.TIFF", "y.WebP", "z.Jpeg", "p.ppm", "q.bmp", "r.pgm", "s.tif",
                           "notes.txt", "noext", "jpg", "archive.jpg.gz"}) {
    WriteFile(root + "/cat/" + name, "x");
  }
  for (const char* name : {"d1.png", "d2.PNG", "d 3.jpg", "d-4.jpg"}) {
    WriteFile(root + "/dog/" + name, "x");
  }
  Symlink("../cat/0.jpg", root + "/dog/same.jpg");
  Symlink("missing.png", root + "/dog/broken.png");
  WriteFile(outside + "/o.jpg", "x");
  Symlink(outside + "/o.jpg", root + "/dog/outside.jpg");
  for (const char* dir : {"a", "a b", "a-b", "a.b", "a/c", "a0", "a/c/deep", "B", "_u"}) {
    WriteFile(root + "/nest/" + dir + "/f.jpg", "x");
    WriteFile(root + "/nest/" + dir + "/G.png", "x");
    WriteFile(root + "/nest/" + dir + "/skip.txt", "x");
  }
  WriteFile(root + "/nest/top.jpeg", "x");
  Symlink("../cat", root + "/nest/linkdir");
  Symlink("cat", root + "/linkclass");
  for (const char* cls : {"Zebra", "\xc3\xbcnicode-\xc3\xa7", "a b", "a-b", ".hid", "9"}) {
    WriteFile(root + "/" + cls + "/img.jpg", "x");
    WriteFile(root + "/" + cls + "/img 2.png", "x");
  }
  for (const char* name : {"\xff.jpg", "\xc3\xa9.jpg", "e.jpg", "\xf0\x9f\x98\x80.jpg", "\xc3.png",
                           "\xed\xa0\x80.jpg"}) {
    WriteFile(root + "/bytes/" + name, "x");
  }
  WriteFile(root + "/README.md", "not a class");
  Symlink("README.md", root + "/filelink");
}

struct TreeDef {
  std::string id;
  std::string root;
  std::string layout;
  std::string layout_root;
};

struct CaseDef {
  std::string kind;
  std::string tree;  // tree id for CLI cases; empty for API cases over `n` samples
  uint64_t n = 0;
  std::string spec;
  std::vector<uint64_t> epochs;
  uint32_t rank = 0;
  nlohmann::json python;  // parameters for the oracle
};

std::vector<std::string> LayoutArgs(const TreeDef& tree) {
  std::vector<std::string> args = {"--backing", tree.root, "--layout", tree.layout};
  if (!tree.layout_root.empty()) {
    args.push_back("--layout-root");
    args.push_back(tree.layout_root);
  }
  return args;
}

class PlanVsPython : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = OracleUnavailable();
    if (!why.empty()) {
      if (InCi()) {
        FAIL() << "CI=true but the Python oracle cannot run: " << why;
      } else {
        GTEST_SKIP() << "skipping comparison with the real libraries: " << why;
      }
    }
  }
};

TEST_F(PlanVsPython, AgreesWithTorchTorchvisionAndNumpy) {
  TempDir dir;
  const std::string adversarial = dir / "adv";
  BuildAdversarialTree(adversarial, dir / "outside");
  const std::string train = dir / "train-root";
  for (const char* cls : {"n01", "n02", "n03"}) {
    for (int i = 0; i < 4; ++i)
      WriteFile(train + "/train/" + cls + "/" + std::to_string(i) + ".JPEG", "x");
  }
  WriteFile(train + "/val/n01/0.JPEG", "x");

  std::vector<TreeDef> trees = {{"adv", adversarial, "imagefolder", ""},
                                {"adv-sorted", adversarial, "sorted", ""},
                                {"train", train, "imagefolder", "train"}};
  // Sized datasets for N from 1 to more than the largest world, as layout roots of one tree.
  const std::string sized = dir / "sized";
  const std::vector<int> sizes = {1, 2, 3, 5, 7, 8, 9, 16, 17, 31, 50, 97, 128, 203};
  for (int n : sizes) {
    std::string sub = "n" + std::to_string(n);
    int classes = n < 3 ? 1 : 3;
    for (int i = 0; i < n; ++i) {
      WriteFile(sized + "/" + sub + "/c" + std::to_string(i % classes) + "/s" + std::to_string(i) +
                    ".png",
                "x");
    }
    trees.push_back({sub, sized, "imagefolder", sub});
  }

  // The cases.
  Picker pick{12345};
  std::vector<CaseDef> cases;
  const std::vector<std::string> torch_seeds = {"0",
                                                "1",
                                                "42",
                                                "2147483647",
                                                "4294967303",
                                                "9223372036854775807",
                                                "-1",
                                                "-9223372036854775808",
                                                "123456789012345"};
  std::vector<std::string> tree_ids;
  for (const TreeDef& t : trees) tree_ids.push_back(t.id);
  const std::vector<uint32_t> worlds = {1, 2, 3, 4, 7, 8, 16};
  for (int i = 0; i < 130; ++i) {
    CaseDef c;
    c.kind = "torch-distributed";
    c.tree = tree_ids[static_cast<size_t>(i) % tree_ids.size()];
    std::string seed = pick.From(torch_seeds);
    uint32_t world = pick.From(worlds);
    c.rank = static_cast<uint32_t>(pick.Next() % world);
    int drop_last = static_cast<int>(pick.Next() % 2);
    int shuffle = pick.Next() % 4 == 0 ? 0 : 1;
    c.spec = "torch-distributed:seed=" + seed + ",world=" + std::to_string(world);
    if (pick.Next() % 3 == 0) c.spec += ",ranks=0-" + std::to_string(world - 1);
    if (pick.Next() % 2 == 0)
      c.spec += ",drop_last=" + std::to_string(drop_last);
    else
      drop_last = 0;
    if (pick.Next() % 2 == 0 || shuffle == 0) c.spec += ",shuffle=" + std::to_string(shuffle);
    uint64_t start = pick.Next() % 3 == 0 ? 2 : 0;
    if (start != 0) c.spec += ",start_epoch=" + std::to_string(start);
    if (pick.Next() % 2 == 0) c.spec += ",epochs=90";
    c.epochs = {start, start + 1 + pick.Next() % 20, 89};
    if (seed == "9223372036854775807" || seed == "123456789012345") c.epochs.push_back(1000003);
    if (c.spec.find("epochs=90") != std::string::npos) c.epochs.pop_back();
    c.python = {{"world", world},
                {"rank", c.rank},
                {"shuffle", shuffle},
                {"drop_last", drop_last},
                {"seed", seed}};
    if (c.spec.find("epochs=90") != std::string::npos) {
      c.epochs.erase(
          std::remove_if(c.epochs.begin(), c.epochs.end(), [](uint64_t e) { return e >= 90; }),
          c.epochs.end());
    }
    cases.push_back(c);
  }
  // The largest torch seed only allows epoch 0 (seed + epoch must stay below 2^64).
  cases.push_back({"torch-distributed",
                   "n97",
                   0,
                   "torch-distributed:seed=18446744073709551615,world=4",
                   {0},
                   3,
                   {{"world", 4},
                    {"rank", 3},
                    {"shuffle", 1},
                    {"drop_last", 0},
                    {"seed", "18446744073709551615"}}});
  for (int i = 0; i < 34; ++i) {
    CaseDef c;
    c.kind = "torch-random";
    c.tree = tree_ids[static_cast<size_t>(i * 5 + 1) % tree_ids.size()];
    std::string seed = pick.From(torch_seeds);
    int persistent = i % 8 == 3 ? 1 : 0;
    c.spec = "torch-random:seed=" + seed;
    if (persistent || pick.Next() % 3 == 0) {
      c.spec += ",persistent_workers=" + std::to_string(persistent);
    }
    if (pick.Next() % 2 == 0) c.spec += ",epochs=4";
    c.epochs = {3, 0, 2, 1};
    c.python = {{"seed", seed},
                {"persistent_workers", persistent},
                {"batch_size", pick.From(std::vector<int>{1, 3, 7, 64})}};
    cases.push_back(c);
  }
  const std::vector<std::string> numpy_seeds = {"0", "1", "5", "12345", "2147483648", "4294967295"};
  for (int i = 0; i < 30; ++i) {
    CaseDef c;
    c.kind = "numpy";
    c.tree = tree_ids[static_cast<size_t>(i * 3 + 2) % tree_ids.size()];
    std::string seed = pick.From(numpy_seeds);
    std::string reseed = i % 3 == 0 ? "epoch" : "none";
    if (reseed == "epoch" && seed == "4294967295") seed = "4294967290";
    c.spec = "numpy:seed=" + seed;
    if (reseed == "epoch" || pick.Next() % 2 == 0) c.spec += ",reseed=" + reseed;
    c.epochs = {0, 4, 1};
    c.python = {{"seed", seed}, {"reseed", reseed}};
    cases.push_back(c);
  }
  const std::vector<std::string> rng_seeds = {
      "0",
      "1",
      "5",
      "4294967296",
      "18446744073709551621",
      "340282366920938463463374607431768211455",
      "1606938044258990275541962092341162602522202993782792835301379"};
  for (int i = 0; i < 30; ++i) {
    CaseDef c;
    c.kind = "numpy-rng";
    c.tree = tree_ids[static_cast<size_t>(i * 7 + 3) % tree_ids.size()];
    std::string seed = rng_seeds[static_cast<size_t>(i) % rng_seeds.size()];
    c.spec = "numpy-rng:seed=" + seed;
    if (i % 2 == 0) c.spec += ",epochs=9";
    c.epochs = {2, 0, 8};
    c.python = {{"seed", seed}};
    cases.push_back(c);
  }
  for (const char* id : {"adv", "train", "n1", "n203"}) {
    cases.push_back(
        {"sequential", id, 0, "sequential:epochs=3", {0, 2}, 0, nlohmann::json::object()});
  }
  // API cases: datasets too large to create as trees, epochs asked out of order.
  cases.push_back({"torch-distributed",
                   "",
                   100003,
                   "torch-distributed:seed=7,world=8",
                   {5, 0},
                   6,
                   {{"world", 8}, {"rank", 6}, {"shuffle", 1}, {"drop_last", 0}, {"seed", "7"}}});
  cases.push_back({"torch-distributed",
                   "",
                   100003,
                   "torch-distributed:seed=7,world=8,drop_last=1",
                   {1},
                   7,
                   {{"world", 8}, {"rank", 7}, {"shuffle", 1}, {"drop_last", 1}, {"seed", "7"}}});
  cases.push_back({"torch-random",
                   "",
                   50021,
                   "torch-random:seed=3",
                   {2, 0, 1},
                   0,
                   {{"seed", "3"}, {"persistent_workers", 0}, {"batch_size", 256}}});
  cases.push_back(
      {"numpy", "", 70001, "numpy:seed=99", {1, 0}, 0, {{"seed", "99"}, {"reseed", "none"}}});
  cases.push_back({"numpy-rng", "", 65537, "numpy-rng:seed=2024", {3, 1}, 0, {{"seed", "2024"}}});
  ASSERT_GE(cases.size(), 200u);

  // Ask the oracle.
  nlohmann::json request;
  request["trees"] = nlohmann::json::array();
  for (const TreeDef& t : trees) {
    request["trees"].push_back(
        {{"id", t.id}, {"root", t.root}, {"layout", t.layout}, {"layout_root", t.layout_root}});
  }
  request["cases"] = nlohmann::json::array();
  for (const CaseDef& c : cases) {
    nlohmann::json item = c.python;
    item["kind"] = c.kind;
    item["tree"] = c.tree;
    item["n"] = c.n;
    item["epochs"] = c.epochs;
    request["cases"].push_back(item);
  }
  WriteFile(dir / "oracle.py", kOracleScript);
  WriteFile(dir / "request.json", request.dump());
  CommandResult oracle = testing::Run({PythonPath(), dir / "oracle.py", dir / "request.json"}, 600);
  ASSERT_EQ(oracle.exit_code, 0) << oracle.err;
  nlohmann::json answer = nlohmann::json::parse(oracle.out);

  // Layouts: the sequential plan lists every sample in layout order.
  std::map<std::string, const TreeDef*> tree_by_id;
  for (const TreeDef& t : trees) tree_by_id[t.id] = &t;
  for (const TreeDef& t : trees) {
    const nlohmann::json& expected = answer["trees"][t.id];
    std::vector<std::string> expected_paths;
    size_t total = expected["paths"].size();
    for (size_t i = 0; i < total; ++i) {
      if (!expected["escapes"][i].get<bool>()) {
        expected_paths.push_back(HexDecode(expected["paths"][i].get<std::string>()));
      }
    }
    std::vector<std::string> args = {ClairfsBin(), "plan", "show"};
    for (const std::string& a : LayoutArgs(t)) args.push_back(a);
    for (const char* a : {"--plan", "sequential", "--epoch", "0"}) args.push_back(a);
    CommandResult shown = testing::Run(args);
    ASSERT_EQ(shown.exit_code, 0) << t.id << ": " << shown.err;
    // Text lines hold escaped names (README "Names with any bytes"); -0 gives the raw bytes.
    std::vector<std::string> escaped_paths;
    for (const std::string& p : expected_paths) escaped_paths.push_back(EscapeName(p));
    EXPECT_EQ(Lines(shown.out), escaped_paths) << "layout of tree " << t.id;
    args.push_back("-0");
    CommandResult raw = testing::Run(args);
    args.pop_back();
    ASSERT_EQ(raw.exit_code, 0) << t.id << ": " << raw.err;
    std::vector<std::string> raw_paths;
    for (size_t start = 0; start < raw.out.size();) {
      const size_t end = raw.out.find('\0', start);
      if (end == std::string::npos) break;
      raw_paths.push_back(raw.out.substr(start, end - start));
      start = end + 1;
    }
    EXPECT_EQ(raw_paths, expected_paths) << "layout of tree " << t.id << " (-0)";
    args.push_back("--format");
    args.push_back("indices");
    CommandResult indices = testing::Run(args);
    ASSERT_EQ(indices.exit_code, 0) << indices.err;
    EXPECT_EQ(Lines(indices.out).size(), total) << "sample count of tree " << t.id;
  }
  EXPECT_GT(answer["trees"]["adv"]["paths"].size(), 60u);

  // Sampler orders.
  int cli_checks = 0, api_checks = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const CaseDef& c = cases[i];
    const nlohmann::json& expected_epochs = answer["cases"][i]["epochs"];
    // Tree cases: the first epoch through the CLI (layout + plan), the others through the API
    // on the same plan object, which also exercises replaying and restarting streams.
    uint64_t n = c.tree.empty() ? c.n : answer["trees"][c.tree]["paths"].size();
    auto spec = ParsePlanSpec(c.spec);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    auto created = Plan::Create(*spec, n);
    ASSERT_TRUE(created.ok()) << created.status().message();
    std::unique_ptr<Plan> plan = std::move(*created);
    bool first = true;
    for (uint64_t epoch : c.epochs) {
      std::vector<uint64_t> expected =
          expected_epochs[std::to_string(epoch)].get<std::vector<uint64_t>>();
      std::vector<uint64_t> actual;
      if (c.tree.empty() || !first) {
        auto indices = plan->RankIndices(epoch, c.rank);
        ASSERT_TRUE(indices.ok()) << indices.status().message();
        actual = *indices;
        ++api_checks;
      } else {
        std::vector<std::string> args = {ClairfsBin(), "plan", "show"};
        for (const std::string& a : LayoutArgs(*tree_by_id[c.tree])) args.push_back(a);
        for (const std::string& a :
             {std::string("--plan"), c.spec, std::string("--epoch"), std::to_string(epoch),
              std::string("--rank"), std::to_string(c.rank), std::string("--format"),
              std::string("indices")}) {
          args.push_back(a);
        }
        CommandResult shown = testing::Run(args);
        ASSERT_EQ(shown.exit_code, 0) << c.spec << ": " << shown.err;
        for (const std::string& line : Lines(shown.out)) actual.push_back(std::stoull(line));
        ++cli_checks;
      }
      first = false;
      EXPECT_EQ(actual, expected) << "case " << i << " " << c.spec << " tree '" << c.tree
                                  << "' epoch " << epoch << " rank " << c.rank;
    }
  }
  printf("checked %zu cases: %d epoch orders through the CLI, %d through the API\n", cases.size(),
         cli_checks, api_checks);
}

}  // namespace
}  // namespace clairfs
