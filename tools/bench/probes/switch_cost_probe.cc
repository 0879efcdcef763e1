// switch_cost_probe: what a context switch costs on this machine, between two threads of one
// process and between two processes. A FUSE request is such a switch pair (reader -> daemon ->
// reader); an in-process FUSE server (fuse_uring_probe) pays the first kind, clairfs's readers
// the second. Both sides are pinned to CPU 0 and ping-pong one byte through two pipes; the
// result is the median time per round trip (two switches) over --repeat runs.
//
// usage: switch_cost_probe [--round-trips N] [--repeat R]
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Pipes {
  int to_echo[2];
  int to_caller[2];
};

void PinToCpu0() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  (void)sched_setaffinity(0, sizeof(set), &set);
}

// Returns false when a pipe breaks (the other side died).
bool Echo(const Pipes& p, long round_trips) {
  PinToCpu0();
  char c;
  for (long i = 0; i < round_trips; ++i) {
    if (read(p.to_echo[0], &c, 1) != 1 || write(p.to_caller[1], &c, 1) != 1) return false;
  }
  return true;
}

// Microseconds per round trip, or a negative value if the pipes failed.
double PingPong(bool two_processes, long round_trips) {
  Pipes p;
  if (pipe(p.to_echo) != 0 || pipe(p.to_caller) != 0) return -1;
  pid_t child = -1;
  pthread_t thread{};
  struct Arg {
    Pipes* pipes;
    long round_trips;
  } arg{&p, round_trips};
  if (two_processes) {
    child = fork();
    if (child < 0) return -1;
    if (child == 0) _exit(Echo(p, round_trips) ? 0 : 1);
  } else {
    auto run = [](void* a) -> void* {
      auto* x = static_cast<Arg*>(a);
      (void)Echo(*x->pipes, x->round_trips);
      return nullptr;
    };
    if (pthread_create(&thread, nullptr, run, &arg) != 0) return -1;
  }
  PinToCpu0();
  char c = 'x';
  bool ok = true;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < round_trips && ok; ++i) {
    ok = write(p.to_echo[1], &c, 1) == 1 && read(p.to_caller[0], &c, 1) == 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (two_processes) {
    int status = 0;
    (void)waitpid(child, &status, 0);
  } else {
    pthread_join(thread, nullptr);
  }
  for (int fd : {p.to_echo[0], p.to_echo[1], p.to_caller[0], p.to_caller[1]}) close(fd);
  return ok ? seconds / static_cast<double>(round_trips) * 1e6 : -1;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  long round_trips = 200000;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--round-trips" || arg == "--repeat") && i + 1 < argc) {
      const long v = std::strtol(argv[++i], nullptr, 10);
      if (v <= 0) {
        std::fprintf(stderr, "switch_cost_probe: %s needs a positive number\n", arg.c_str());
        return 2;
      }
      if (arg == "--repeat") {
        repeat = static_cast<int>(std::min(v, 1000L));
      } else {
        round_trips = v;
      }
    } else {
      std::fprintf(stderr, "usage: switch_cost_probe [--round-trips N] [--repeat R]\n");
      return 2;
    }
  }
  std::vector<double> threads, processes;
  for (int r = 0; r < repeat; ++r) {  // interleaved, so a drift of the machine hits both
    const double t = PingPong(false, round_trips);
    const double p = PingPong(true, round_trips);
    if (t < 0 || p < 0) {
      std::fprintf(stderr, "switch_cost_probe: pipe ping-pong failed: %s\n", std::strerror(errno));
      return 1;
    }
    threads.push_back(t);
    processes.push_back(p);
  }
  std::printf("round trip (2 context switches on CPU 0), median of %d x %ld:\n", repeat,
              round_trips);
  std::printf("  two threads of one process  %.2f us\n", Median(threads));
  std::printf("  two processes               %.2f us\n", Median(processes));
  std::printf("  ratio                       %.2fx\n", Median(processes) / Median(threads));
  return 0;
}
