#!/bin/bash
# Passthrough benchmark (docs/BENCHMARKS.md, section "Passthrough"): reads staged files through a
# clairfs mount with --passthrough on and off, side by side with reading the staged copies
# directly, and the page-cache growth a read through the mount causes.
#
# Usage: tools/bench_passthrough.sh CLAIRFS_BIN WORKDIR [BIG_MIB] [SMALL_COUNT]
#   BIG_MIB      size of the big file (default 1024)
#   SMALL_COUNT  number of 110 KB files (default 3000)
# Needs root (mounts; passthrough needs CAP_SYS_ADMIN), fincore (util-linux) and GNU dd.
# Timings: wall clock of `cat` (1 file) or `xargs -P2 cat` (small files, 2 threads) into
# /dev/null. "direct" reads the staged copies under CACHE/data with their pages warm; "fresh"
# is the first read after a fresh mount (the mount's own caches empty, the copies' pages warm);
# "warm" is a second read through the same mount. Ratio = direct time / mount time (higher is
# better, 1.0 = native). Page-cache growth: the copies' pages are dropped (dd iflag=nocache),
# /proc/meminfo Cached is sampled before and after one read of the big file through a fresh
# mount, and the copies' resident pages (fincore) are subtracted: what remains is what the
# mount's own page cache added.
set -euo pipefail
BIN=$(readlink -f "$1")
WORK=$2
BIG_MIB=${3:-1024}
SMALL_COUNT=${4:-3000}
mkdir -p "$WORK"
WORK=$(readlink -f "$WORK")

now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc -l; }
ratio() { echo "scale=3; $1 / $2" | bc -l; }
cached_kib() { awk '/^Cached:/ {print $2}' /proc/meminfo; }

# Datasets (made once).
if [ ! -f "$WORK/big/big.bin" ]; then
  mkdir -p "$WORK/big" "$WORK/small"
  head -c $((BIG_MIB << 20)) /dev/urandom >"$WORK/big/big.bin"
  for i in $(seq 1 "$SMALL_COUNT"); do
    head -c 112640 /dev/urandom >"$WORK/small/f$i.bin"
  done
fi

mount_set() {  # NAME MODE: mounts WORK/NAME on WORK/mnt-NAME with cache WORK/cache-NAME
  mkdir -p "$WORK/mnt-$1"
  "$BIN" mount "$WORK/$1" "$WORK/mnt-$1" --cache "$WORK/cache-$1" --passthrough "$2" >/dev/null
}
umount_set() { "$BIN" umount "$WORK/mnt-$1" >/dev/null; }
read_all() { find "$1" -type f -print0 | xargs -0 -n 64 -P "$2" cat >/dev/null; }
timed_read() {  # DIR THREADS -> seconds
  local t0 t1
  t0=$(now)
  read_all "$1" "$2"
  t1=$(now)
  secs "$t0" "$t1"
}

# Stage everything once (read-through), then wait for the staging queue to drain.
for set in big small; do
  mount_set "$set" off
  read_all "$WORK/mnt-$set" 2
  for _ in $(seq 1 600); do
    q=$("$BIN" status "$WORK/mnt-$set" --json | python3 -c \
      'import json,sys; s=json.load(sys.stdin)["staging"]; print(s["queued"]+s["in_flight"])')
    [ "$q" = 0 ] && break
    sleep 0.5
  done
  umount_set "$set"
done

echo "kernel $(uname -r), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in on off; do
  # Big file: direct (warm copy) vs first read after a fresh mount.
  read_all "$WORK/cache-big/data" 1
  direct=$(timed_read "$WORK/cache-big/data" 1)
  mount_set big "$mode"
  state=$("$BIN" status "$WORK/mnt-big" --json | python3 -c \
    'import json,sys; p=json.load(sys.stdin)["passthrough"]; print(p["state"])')
  fresh=$(timed_read "$WORK/mnt-big" 1)
  warm=$(timed_read "$WORK/mnt-big" 1)
  umount_set big
  echo "passthrough=$mode (state $state) big ${BIG_MIB} MiB: direct ${direct}s fresh ${fresh}s" \
    "($(ratio "$direct" "$fresh")x) warm ${warm}s ($(ratio "$direct" "$warm")x)"

  # Small files, 2 threads.
  read_all "$WORK/cache-small/data" 2
  direct=$(timed_read "$WORK/cache-small/data" 2)
  mount_set small "$mode"
  fresh=$(timed_read "$WORK/mnt-small" 2)
  warm=$(timed_read "$WORK/mnt-small" 2)
  umount_set small
  echo "passthrough=$mode small ${SMALL_COUNT} x 110 KB, 2 threads: direct ${direct}s" \
    "fresh ${fresh}s ($(ratio "$direct" "$fresh")x) warm ${warm}s ($(ratio "$direct" "$warm")x)"

  # Page-cache growth of one read of the big file through a fresh mount.
  copy=$(find "$WORK/cache-big/data" -type f | head -1)
  mount_set big "$mode"
  dd if="$copy" iflag=nocache count=0 status=none
  before=$(cached_kib)
  read_all "$WORK/mnt-big" 1
  after=$(cached_kib)
  resident=$(fincore -b -n -o RES "$copy" | awk '{print $1}')
  umount_set big
  growth=$(((after - before) * 1024))
  extra=$((growth - resident))
  echo "passthrough=$mode page cache after reading $((BIG_MIB << 20)) bytes once: Cached" \
    "+$growth bytes, of which the copy's pages $resident, the mount's own" \
    "$extra ($(ratio "$extra" $((BIG_MIB << 20)))x N)"
done
