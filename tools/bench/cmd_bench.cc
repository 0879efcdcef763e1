// `clairfs bench`: the parent of the benchmark instruments (see cmd_bench.h for how to add one).
#include "tools/bench/cmd_bench.h"

#include <cstdio>

#include "tools/cli/cli.h"

namespace clairfs::cli {

void RegisterBench(CLI::App& app) {
  CLI::App* bench = app.add_subcommand(
      "bench",
      "Benchmark instruments: synthetic datasets, PFS emulator overhead, small and big files, "
      "kernel passthrough, manifest scale, training epochs, heat-guided staging, soak, the peer "
      "tier");
  bench->require_subcommand(1);
  RegisterBenchMakeDataset(*bench);
  RegisterBenchVerifyDataset(*bench);
  RegisterBenchPfsEmuOverhead(*bench);
  RegisterBenchStage(*bench);
  RegisterBenchSmallfile(*bench);
  RegisterBenchBigfile(*bench);
  RegisterBenchPassthrough(*bench);
  RegisterBenchManifest(*bench);
  RegisterBenchEpoch(*bench);
  RegisterBenchHeat(*bench);
  RegisterBenchSoak(*bench);
  RegisterBenchPeers(*bench);
  RegisterBenchInfer(*bench);
}

int ReportBench(const char* command, const Status& measured, const nlohmann::json& result,
                bool json, void (*print_table)(const nlohmann::json&)) {
  if (!measured.ok()) return Fail(command, measured);
  if (json) {
    printf("%s\n", result.dump().c_str());
  } else {
    print_table(result);
  }
  return kExitOk;
}

}  // namespace clairfs::cli
