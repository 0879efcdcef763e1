// ClusterModel checks, placement names and totals (see cluster_model.h).
#include "planner/cluster/cluster_model.h"

#include <cmath>

namespace clairfs {

const char* ClusterPlacementName(ClusterPlacement placement) {
  switch (placement) {
    case ClusterPlacement::kNone:
      return "none";
    case ClusterPlacement::kNoPfs:
      return "nopfs";
    case ClusterPlacement::kClairfs:
      return "clairfs";
  }
  return "?";
}

Result<ClusterPlacement> ParseClusterPlacement(std::string_view text) {
  if (text == "none") return ClusterPlacement::kNone;
  if (text == "nopfs") return ClusterPlacement::kNoPfs;
  if (text == "clairfs") return ClusterPlacement::kClairfs;
  return Status::Invalid("--placement '" + std::string(text) +
                         "': expected none, nopfs, clairfs or all");
}

const char* ClusterSyncName(ClusterSync sync) {
  switch (sync) {
    case ClusterSync::kStep:
      return "step";
    case ClusterSync::kEpoch:
      return "epoch";
  }
  return "?";
}

Result<ClusterSync> ParseClusterSync(std::string_view text) {
  if (text == "step") return ClusterSync::kStep;
  if (text == "epoch") return ClusterSync::kEpoch;
  return Status::Invalid("--sync '" + std::string(text) + "': expected step or epoch");
}

Status CheckClusterModel(const ClusterModel& model) {
  if (model.nodes == 0) return Status::Invalid("--nodes must be at least 1");
  if (model.ranks_per_node == 0) return Status::Invalid("--ranks-per-node must be at least 1");
  if (model.node_capacity == 0) return Status::Invalid("--node-capacity must be more than 0");
  if (model.reader_threads == 0) return Status::Invalid("--reader-threads must be at least 1");
  struct Figure {
    const char* flag;
    double value;
    bool may_be_zero;
  };
  for (const Figure& f : {Figure{"--pfs-bandwidth", model.pfs_bandwidth, false},
                          Figure{"--pfs-open-latency", model.pfs_open_latency, true},
                          Figure{"--pfs-metadata-ops", model.pfs_metadata_ops, false},
                          Figure{"--net-bandwidth", model.net_bandwidth, false},
                          Figure{"--nvme-bandwidth", model.nvme_bandwidth, false},
                          Figure{"--work-ms", model.work, true},
                          Figure{"--copy-ms", model.copy_time, true},
                          Figure{"--setup-s", model.setup_time, true},
                          Figure{"--mount-s", model.mount_time, true},
                          Figure{"--cores", model.cores, false},
                          Figure{"--open-cpu-ms", model.open_cpu, true},
                          Figure{"--copy-cpu-ms", model.copy_cpu, true},
                          Figure{"--digest-cpu-ms", model.digest_cpu, true},
                          Figure{"--transfer-cpu-ms", model.transfer_cpu, true},
                          Figure{"--transfer-ms", model.transfer_time, true},
                          Figure{"--transfer-slot-ms", model.transfer_slot_time, true},
                          Figure{"--refusal-ms", model.refusal_time, true},
                          Figure{"--agent-call-ms", model.agent_call_time, true},
                          Figure{"--pfs-copy-ms", model.pfs_copy_time, true},
                          Figure{"--leave-to-reader-ms", model.leave_to_reader, true}}) {
    if (std::isnan(f.value) || f.value < 0 || (!f.may_be_zero && f.value == 0)) {
      return Status::Invalid(std::string(f.flag) +
                             (f.may_be_zero ? " must not be negative" : " must be more than 0"));
    }
  }
  if (std::isinf(model.pfs_open_latency) || std::isinf(model.work) || std::isinf(model.copy_time)) {
    return Status::Invalid("--pfs-open-latency, --work-ms and --copy-ms must be finite");
  }
  for (double figure :
       {model.setup_time, model.mount_time, model.open_cpu, model.copy_cpu, model.digest_cpu,
        model.transfer_cpu, model.transfer_time, model.transfer_slot_time, model.refusal_time,
        model.agent_call_time, model.pfs_copy_time, model.leave_to_reader}) {
    if (std::isinf(figure)) {
      return Status::Invalid(
          "--setup-s, --mount-s, --open-cpu-ms, --copy-cpu-ms, --digest-cpu-ms, --transfer-cpu-ms, "
          "--transfer-ms, --transfer-slot-ms, --refusal-ms, --agent-call-ms, --pfs-copy-ms and "
          "--leave-to-reader-ms must be finite");
    }
  }
  if (model.leave_as_measured && (model.pfs_copy_time <= 0 || model.leave_to_reader > 0)) {
    return Status::Invalid(
        "--leave-to-reader-ms measured needs --pfs-copy-ms (the copy time the stagers measure)");
  }
  if (model.transfer_slot_time > model.transfer_time) {
    return Status::Invalid(
        "--transfer-slot-ms must be at most --transfer-ms (the copy arrives "
        "after its slot is free)");
  }
  if (!(model.reader_share > 0 && model.reader_share <= 1)) {
    return Status::Invalid("--reader-share must be more than 0 and at most 1");
  }
  return Status::Ok();
}

ClusterEpochResult ClusterRunResult::Total() const {
  ClusterEpochResult total;
  std::vector<const ClusterEpochResult*> parts{&setup};  // the setup's staging is the job's too
  for (const ClusterEpochResult& e : epochs) parts.push_back(&e);
  for (const ClusterEpochResult* part : parts) {
    const ClusterEpochResult& e = *part;
    total.reads += e.reads;
    total.local_hits += e.local_hits;
    total.peer_reads += e.peer_reads;
    total.pfs_reads += e.pfs_reads;
    total.local_bytes += e.local_bytes;
    total.pfs_bytes += e.pfs_bytes;
    total.pfs_opens += e.pfs_opens;
    total.peer_bytes += e.peer_bytes;
    total.staged_files += e.staged_files;
    total.late_transfers += e.late_transfers;
    total.late_copies += e.late_copies;
    total.left_to_reader += e.left_to_reader;
    total.staging_behind += e.staging_behind;
    total.unrefused_wants += e.unrefused_wants;
    total.refused_wants += e.refused_wants;
    total.time += e.time;
    total.stall += e.stall;
  }
  return total;
}

}  // namespace clairfs
