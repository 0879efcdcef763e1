#!/usr/bin/env bash
# A private systemd for tests/systemd_test.cc, on machines where systemd is not PID 1 (containers,
# CI) or where the test must not touch the machine's own: systemd runs as PID 1 of new pid,
# mount, cgroup, UTS and IPC namespaces, with its own /run and its own cgroup trees (children of
# cgroups made for it on the host). It sees only the units in UNIT_DIR (SYSTEMD_UNIT_PATH) and
# runs no generator: none of the distribution's units exists for it, so nothing of a real boot
# (sysinit.target's tmpfiles, which would empty the host's /tmp, sysctl, udev) can start. The
# targets a unit's default dependencies name (sysinit.target, basic.target, ...) are empty stubs
# written here. Its mount namespace is a copy of the caller's, slave to it: the units see the
# host's files, what they mount stays in that copy, which plays the host's part (a mount must show
# there, in systemd's own namespace, to be visible to anyone), and an unmount on the host reaches
# the copy (a private copy would keep other FUSE mounts of the machine alive after their owners
# unmounted them, and their daemons waiting, until this systemd ends).
#
#   private_systemd.sh start NAME UNIT_DIR   starts it; prints the host pid of its PID 1 once it
#                                            answers systemctl (exit 1 after 30 s otherwise)
#   private_systemd.sh stop NAME PID         kills it (and so everything it started, and its
#                                            mounts) and removes its cgroups
# Talk to it with `nsenter -t PID -m -p -- systemctl ...`; after writing units into UNIT_DIR,
# `systemctl daemon-reload`. NAME names the cgroups (/sys/fs/cgroup/<hierarchy>/NAME): unique
# per caller. Needs root, unshare(1), nsenter(1) and cgroups (v1 with a "systemd" hierarchy and
# v2 at /sys/fs/cgroup/unified, or v2 at /sys/fs/cgroup).
set -euo pipefail

hierarchies() {
  local h
  for h in systemd unified devices; do
    [ -e "/sys/fs/cgroup/$h/cgroup.procs" ] && echo "/sys/fs/cgroup/$h"
  done
  if [ -e /sys/fs/cgroup/cgroup.controllers ]; then echo /sys/fs/cgroup; fi
}

# Runs as PID 1 of the new namespaces.
inner() {
  local units=$1
  mount -t proc proc /proc
  mount -t tmpfs -o mode=755 tmpfs /run
  if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
    # Pure cgroup v2: a mount made in the cgroup namespace is rooted at our cgroup.
    umount -R /sys/fs/cgroup
    mount -t cgroup2 none /sys/fs/cgroup
  else
    umount -R /sys/fs/cgroup
    mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup
    mkdir -p /sys/fs/cgroup/unified /sys/fs/cgroup/systemd /sys/fs/cgroup/devices
    mount -t cgroup2 none /sys/fs/cgroup/unified
    mount -t cgroup -o none,name=systemd none /sys/fs/cgroup/systemd
    mount -t cgroup -o devices none /sys/fs/cgroup/devices || rmdir /sys/fs/cgroup/devices
  fi
  mkdir -p /run/clairfs-test-empty
  exec env -i container=clairfs-test PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    SYSTEMD_UNIT_PATH="$units" SYSTEMD_GENERATOR_PATH=/run/clairfs-test-empty \
    SYSTEMD_ENVIRONMENT_GENERATOR_PATH=/run/clairfs-test-empty \
    /lib/systemd/systemd --system --unit=clairfs-test.target --log-target=console \
    --show-status=no
}

start() {
  local name=$1 units=$2 h pid
  local stub
  for stub in clairfs-test.target sysinit.target basic.target local-fs.target remote-fs.target \
    network.target network-online.target multi-user.target shutdown.target system.slice; do
    printf '[Unit]\nDescription=stub of the private systemd\nDefaultDependencies=no\n' \
      > "$units/$stub"
  done
  for h in $(hierarchies); do mkdir -p "$h/$name"; done
  # The child moves itself into the new cgroups, then (unshare forks) its child becomes PID 1
  # of the new namespaces.
  NAME=$name UNITS=$units SELF=$0 bash -c '
    for h in $(bash "$SELF" hierarchies); do echo $$ > "$h/$NAME/cgroup.procs"; done
    exec unshare --pid --fork --mount --cgroup --uts --ipc --propagation slave \
      bash "$SELF" inner "$UNITS"' > "$units/console.log" 2>&1 < /dev/null &
  local launcher=$!
  for _ in $(seq 300); do
    pid=$(pgrep -P "$launcher" | head -n1 || true)
    if [ -n "$pid" ] &&
      nsenter -t "$pid" -m -p -- systemctl is-active clairfs-test.target > /dev/null 2>&1; then
      echo "$pid"
      return 0
    fi
    sleep 0.1
  done
  echo "private systemd did not come up; console:" >&2
  cat "$units/console.log" >&2
  [ -z "${pid:-}" ] || kill -9 "$pid" 2> /dev/null || true
  return 1
}

stop() {
  local name=$1 pid=$2 h
  kill -9 "$pid" 2> /dev/null || true
  for _ in $(seq 100); do
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
  done
  for h in $(hierarchies); do
    [ -d "$h/$name" ] || continue
    # Deepest first: systemd made slices and scopes below.
    find "$h/$name" -depth -type d -exec rmdir {} + 2> /dev/null || true
  done
}

case "${1:-}" in
  start) start "$2" "$3" ;;
  stop) stop "$2" "$3" ;;
  inner) inner "$2" ;;
  hierarchies) hierarchies ;;
  *)
    echo "usage: private_systemd.sh start NAME UNIT_DIR | stop NAME PID" >&2
    exit 2
    ;;
esac
