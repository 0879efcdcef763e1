# shellcheck shell=bash
# Shell functions the CI scripts share (sourced by .ci/run, .ci/sanitize and .ci/fuzz).

# The machine's CPU time so far, in clock ticks (/proc/stat): busy, waiting for I/O, in all.
# Stolen time counts in all only: it was the hypervisor's, not this run's.
cpu_ticks() {
  awk '/^cpu /{print $2 + $3 + $4 + $7 + $8, $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat
}

# timed LABEL COMMAND [ARG]...: runs the command (a function too), then prints its label, its wall
# time, the share of the machine's CPU time that was busy meanwhile and the share spent waiting for
# I/O, and its exit status; returns that status. The shares tell whether a stage is bound by the
# CPUs (a build) or leaves them idle (tests waiting on deadlines and fsyncs), that is whether
# running more of it at once would shorten it (docs/RELIABILITY.md, "CI").
timed() {
  local label=$1 start rc=0 busy0 io0 all0 busy1 io1 all1 all
  shift
  read -r busy0 io0 all0 < <(cpu_ticks)
  start=$(date +%s)
  "$@" || rc=$?
  read -r busy1 io1 all1 < <(cpu_ticks)
  all=$((all1 - all0))
  [ "$all" -gt 0 ] || all=1
  echo "$label: $(($(date +%s) - start)) s, CPU busy $((100 * (busy1 - busy0) / all))%," \
    "I/O wait $((100 * (io1 - io0) / all))% (exit $rc)" >&2
  return "$rc"
}

# seed_ctest_costs DIR: gives ctest in build dir DIR the test durations of an earlier run
# (.ci/ctest-costs/DIR.txt, in ctest's own CTestCostData.txt form) when DIR has none of its own.
# ctest starts the tests it knows to be longest first; in a clean clone it knows none and starts
# them in the order they are declared, so the heavy integration tests meet each other on 2 CPUs:
# in two clean-clone CI forms an hour apart the ASan ctest took 1054 s without the durations and
# 801 s with them (docs/RELIABILITY.md, "CI"). A test missing from the file (a new one, or one
# whose name has a space, which ctest's file cannot hold) starts after those in it.
seed_ctest_costs() {
  local dir=$1 costs
  costs="$(dirname "${BASH_SOURCE[0]}")/ctest-costs/$(basename "$dir").txt"
  [ -e "$costs" ] || return 0
  [ -e "$dir/Testing/Temporary/CTestCostData.txt" ] && return 0
  mkdir -p "$dir/Testing/Temporary"
  cp "$costs" "$dir/Testing/Temporary/CTestCostData.txt"
}
