// clairfs-peer: the peer agent's executable (tools/peer/peer_agent.h). `clairfs peer` execs it;
// run it as one MPI rank per node (srun --ntasks-per-node=1, or mpirun --map-by ppr:1:node).
#include <mpi.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "tools/peer/peer_agent.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
// Open MPI keeps what MPI_Init allocates (its components, loaded and unloaded with dlopen) until
// the process ends: LeakSanitizer would report those thousands of blocks at every agent's exit.
// Allocations made inside MPI_Init and MPI_Finalize are left out of the leak check; the agent's
// own are still checked (ASan runs: .ci/sanitize).
struct LeakCheckPause {
  LeakCheckPause() { __lsan_disable(); }
  ~LeakCheckPause() { __lsan_enable(); }
};
#else
struct LeakCheckPause {
  LeakCheckPause() {}  // user-provided: a scope guard, not an unused variable
};
#endif

int main(int argc, char** argv) {
  CLI::App app{
      "clairfs peer: the peer tier's agent for one job (one MPI rank per node). It attaches to "
      "the node's clairfs mount, and the nodes stage the dataset for each other, so the parallel "
      "filesystem is read about once per job (docs/PEERS.md). It exits when every node's plan "
      "is done, when the mount goes away, or on SIGINT/SIGTERM, leaving the cache as it is. Exit "
      "codes: 0 done, 1 start-up refused or the mount went away, 3 done but peers were lost.",
      "clairfs peer"};
  clairfs::peer::AgentOptions options;
  int deadline_ms = 1000;
  app.add_option("MOUNTPOINT", options.mountpoint,
                 "The node's clairfs mount; %r is replaced by the MPI rank (several ranks on one "
                 "machine, each with its own mount)")
      ->required();
  app.add_option("--deadline", deadline_ms,
                 "Milliseconds a file may take to come from a peer before it is staged from the "
                 "PFS instead (default 1000)")
      ->check(CLI::Range(10, 3600000));
  app.add_option("--max-fetches", options.max_fetches,
                 "Files fetched from peers at once (default 32)")
      ->check(CLI::Range(1, 4096));
  app.add_flag("-v,--verbose", options.verbose, "Say more on stderr");
#ifdef CLAIRFS_PEER_FAULTS
  std::string fault = "none";
  app.add_option("--fault", fault, "Test only: serve corrupt, short or forged copies")
      ->check(CLI::IsMember({"none", "corrupt", "short", "forge"}));
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  options.deadline = std::chrono::milliseconds(deadline_ms);
#ifdef CLAIRFS_PEER_FAULTS
  using clairfs::peer::ServeFault;
  options.fault = fault == "corrupt" ? ServeFault::kCorrupt
                  : fault == "short" ? ServeFault::kShort
                  : fault == "forge" ? ServeFault::kForge
                                     : ServeFault::kNone;
#endif
  int provided = 0;
  int init = MPI_SUCCESS;
  {
    LeakCheckPause pause;
    init = MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  }
  if (init != MPI_SUCCESS) {
    fprintf(stderr, "clairfs peer: MPI_Init failed\n");
    return 1;
  }
  const int code = clairfs::peer::RunPeerAgent(options, MPI_COMM_WORLD);
  fflush(stderr);
  // Finalising waits for the other ranks; a dead one would make it wait for ever (Open MPI 4.1
  // has no fault tolerance), so it gets ten seconds.
  signal(SIGALRM, SIG_DFL);
  alarm(10);
  {
    LeakCheckPause pause;
    MPI_Finalize();
  }
  alarm(0);
  return code;
}
