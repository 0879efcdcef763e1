#!/bin/bash
# clairfs peer tier for a Slurm job (example): source or copy into a job script, before its
# training step. It starts one `clairfs peer` agent per node for the job's lifetime; the nodes
# then stage the dataset for each other (docs/PEERS.md; the site's peer key: docs/ADMIN.md).
#
#   CLAIRFS             clairfs binary (default: clairfs on PATH)
#   CLAIRFS_MOUNTPOINT  the nodes' clairfs mount of the dataset (default /datasets/imagenet)
#
# The agent exits by itself when every node's plan is done, or when the job step ends; a node
# whose agent fails keeps reading through its own cache and the parallel filesystem.
set -u
CLAIRFS=${CLAIRFS:-clairfs}
MOUNTPOINT=${CLAIRFS_MOUNTPOINT:-/datasets/imagenet}
srun --ntasks-per-node=1 --overlap "$CLAIRFS" peer "$MOUNTPOINT" &
export CLAIRFS_PEER_STEP_PID=$!
