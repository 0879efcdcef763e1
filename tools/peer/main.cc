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
// ASan runs (.ci/sanitize): Open MPI keeps blocks it allocates (at MPI_Init, in its components
// loaded with dlopen, and on its own progress thread) until the process ends. Leaks whose
// allocation stack passes through Open MPI's libraries are not the agent's; full stacks on malloc
// (slower, this executable only) let the suppressions see those frames, so that a leak of the
// agent's own code is still reported.
extern "C" const char* __asan_default_options() { return "fast_unwind_on_malloc=0"; }
// No table of the suppressions used at exit: in a log directory, any file counts as a report.
extern "C" const char* __lsan_default_options() { return "print_suppressions=0"; }
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\nleak:libpmix.so\n"
         "leak:libevent_core\nleak:libevent_pthreads\nleak:libhwloc.so\n";
}
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
  int plan_wait_s = 600;
  app.add_option("--plan-wait", plan_wait_s,
                 "Seconds to wait for a mount under --plan auto to infer its plan (the agent "
                 "places files by it) before giving up (default 600)")
      ->check(CLI::Range(0, 86400));
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
  options.plan_wait = std::chrono::seconds(plan_wait_s);
#ifdef CLAIRFS_PEER_FAULTS
  using clairfs::peer::ServeFault;
  options.fault = fault == "corrupt" ? ServeFault::kCorrupt
                  : fault == "short" ? ServeFault::kShort
                  : fault == "forge" ? ServeFault::kForge
                                     : ServeFault::kNone;
#endif
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "clairfs peer: MPI_Init failed\n");
    return 1;
  }
  const int code = clairfs::peer::RunPeerAgent(options, MPI_COMM_WORLD);
  fflush(stderr);
  // Finalising waits for the other ranks; a dead one would make it wait for ever (Open MPI 4.1
  // has no fault tolerance), so it gets ten seconds.
  signal(SIGALRM, SIG_DFL);
  alarm(10);
  MPI_Finalize();
  alarm(0);
  return code;
}
