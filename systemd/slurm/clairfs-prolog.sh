#!/bin/bash
# clairfs Slurm prolog (example): stage the job's dataset onto this node before the job starts,
# then log the mount's status. Install as (or call from) slurm.conf's Prolog=; it runs as root on
# every node of the job.
#
# Settings (environment, e.g. from /etc/default/clairfs-slurm, which is read if present):
#   CLAIRFS                clairfs binary (default: clairfs on PATH)
#   CLAIRFS_MOUNTPOINT     the node's clairfs mount of the dataset (default /datasets/imagenet)
#   CLAIRFS_STAGE_PATHS    space-separated paths under the mount to stage (default: all of it)
#   CLAIRFS_GPUS_PER_NODE  ranks per node when Slurm does not say (default 1)
#   CLAIRFS_STRICT         1: a failed staging fails the prolog (Slurm then drains the node);
#                          default 0: log it and let the job read through the mount
# From Slurm: SLURM_JOB_ID, SLURM_NODEID (this node's index in the job), SLURM_JOB_NUM_NODES,
# SLURM_GPUS_ON_NODE or SLURM_JOB_GPUS (GPUs here).
set -u
if [ -r /etc/default/clairfs-slurm ]; then
  # shellcheck source=/dev/null
  . /etc/default/clairfs-slurm
fi
CLAIRFS=${CLAIRFS:-clairfs}
MOUNTPOINT=${CLAIRFS_MOUNTPOINT:-/datasets/imagenet}
STRICT=${CLAIRFS_STRICT:-0}
JOB=${SLURM_JOB_ID:-unknown}

log() { echo "clairfs-prolog[job $JOB]: $*" >&2; }

# This node's ranks: nodes are numbered 0..N-1 by SLURM_NODEID; with G GPUs (one rank each) per
# node, node i holds ranks i*G .. i*G+G-1. A plan-driven stage would pass these to `clairfs plan`.
node=${SLURM_NODEID:-0}
gpus=${SLURM_GPUS_ON_NODE:-}
if [ -z "$gpus" ] && [ -n "${SLURM_JOB_GPUS:-}" ]; then
  IFS=, read -r -a gpu_list <<<"$SLURM_JOB_GPUS"
  gpus=${#gpu_list[@]}
fi
gpus=${gpus:-${CLAIRFS_GPUS_PER_NODE:-1}}
if ! [[ "$node" =~ ^[0-9]+$ && "$gpus" =~ ^[0-9]+$ && "$gpus" -gt 0 ]]; then
  log "bad SLURM_NODEID ($node) or GPU count ($gpus)"
  exit 1
fi
first_rank=$((node * gpus))
last_rank=$((first_rank + gpus - 1))
log "node $node of ${SLURM_JOB_NUM_NODES:-?}: ranks $first_rank-$last_rank ($gpus per node)"

read -r -a paths <<<"${CLAIRFS_STAGE_PATHS:-}"
start=$(date +%s)
if "$CLAIRFS" stage "$MOUNTPOINT" "${paths[@]}" --wait >&2; then
  log "staged ${CLAIRFS_STAGE_PATHS:-the whole dataset} in $(($(date +%s) - start)) s"
  rc=0
else
  rc=$?
  log "staging failed (exit $rc); the job will read the missing files through the mount"
fi
"$CLAIRFS" status "$MOUNTPOINT" >&2 || log "no status from $MOUNTPOINT"
if [ "$rc" -ne 0 ] && [ "$STRICT" = 1 ]; then
  exit 1
fi
exit 0
