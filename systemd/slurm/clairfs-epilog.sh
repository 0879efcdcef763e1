#!/bin/bash
# clairfs Slurm epilog (example): log what the job's reads did on this node's mount, and
# optionally evict what the job staged. Install as (or call from) slurm.conf's Epilog=.
#
# Settings (environment, or /etc/default/clairfs-slurm):
#   CLAIRFS              clairfs binary (default: clairfs on PATH)
#   CLAIRFS_MOUNTPOINT   the node's clairfs mount (default /datasets/imagenet)
#   CLAIRFS_STAGE_PATHS  what the prolog staged (default: all of it)
#   CLAIRFS_EVICT_AFTER  1: evict those paths after the job (pinned files stay); default 0
# An epilog must not fail a healthy node: every error is logged and the script exits 0.
set -u
if [ -r /etc/default/clairfs-slurm ]; then
  # shellcheck source=/dev/null
  . /etc/default/clairfs-slurm
fi
CLAIRFS=${CLAIRFS:-clairfs}
MOUNTPOINT=${CLAIRFS_MOUNTPOINT:-/datasets/imagenet}
JOB=${SLURM_JOB_ID:-unknown}

log() { echo "clairfs-epilog[job $JOB]: $*" >&2; }

if status=$("$CLAIRFS" status "$MOUNTPOINT" --json); then
  # One line for the log: the job's view of the cache.
  log "status $(printf '%s' "$status" | tr -d ' \n')"
else
  log "no status from $MOUNTPOINT"
fi
if [ "${CLAIRFS_EVICT_AFTER:-0}" = 1 ]; then
  read -r -a paths <<<"${CLAIRFS_STAGE_PATHS:-}"
  if [ ${#paths[@]} -eq 0 ]; then
    "$CLAIRFS" evict "$MOUNTPOINT" --all >&2 || log "evict failed"
  else
    "$CLAIRFS" evict "$MOUNTPOINT" "${paths[@]}" >&2 || log "evict failed"
  fi
fi
exit 0
