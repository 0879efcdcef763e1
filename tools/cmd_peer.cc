// `clairfs peer MOUNTPOINT [options]`: runs the peer agent of a job (docs/PEERS.md).
//
// The agent is its own executable, clairfs-peer, linked with MPI; this command only execs it
// with the arguments it was given, so that the `clairfs` binary (which the mount daemon runs)
// never loads libmpi. It looks for clairfs-peer beside this binary, then on PATH. Run it as one
// MPI rank per node: `srun --ntasks-per-node=1 --overlap clairfs peer /datasets/imagenet &`.
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tools/cli/cli.h"
#include "tools/commands.h"

namespace clairfs::cli {
namespace {

constexpr char kAgent[] = "clairfs-peer";

int ExecAgent(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(kAgent));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string beside;
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    dir = dir.substr(0, dir.rfind('/'));
    beside = dir + "/" + kAgent;
    execv(beside.c_str(), argv.data());
  }
  execvp(kAgent, argv.data());
  fprintf(stderr,
          "clairfs peer: cannot run %s (%s): it is built and installed with clairfs; looked "
          "beside this binary (%s) and on PATH\n",
          kAgent, strerror(errno), beside.empty() ? "?" : beside.c_str());
  return kExitFailed;
}

}  // namespace

void RegisterPeer(CLI::App& app) {
  CLI::App* cmd = AddCommand(
      &app, "peer",
      "Run the peer tier's agent for one job, one MPI rank per node: the nodes stage the "
      "dataset for each other, so the parallel filesystem is read about once per job "
      "(clairfs peer --help for its options; docs/PEERS.md)");
  cmd->prefix_command();
  cmd->set_help_flag();  // clairfs-peer answers --help itself
  cmd->callback([cmd]() { SetExitCode(ExecAgent(cmd->remaining())); });
}

}  // namespace clairfs::cli
