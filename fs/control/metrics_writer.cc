// Prometheus text file of the status counters (see metrics_writer.h).
#include "fs/control/metrics_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <set>

#include "planner/base/log.h"
#include "planner/base/name_escape.h"

namespace clairfs {
namespace {

// Status fields that only grow while the daemon runs.
const std::set<std::string>& CounterNames() {
  static const std::set<std::string> names = {"opens",
                                              "hits",
                                              "misses",
                                              "miss_causes_unplanned",
                                              "miss_causes_copy_queued",
                                              "miss_causes_copy_in_flight",
                                              "miss_causes_left_to_reader",
                                              "miss_causes_not_staged_ahead",
                                              "reads",
                                              "bytes_from_cache",
                                              "bytes_from_backing",
                                              "hits_peer_copies",
                                              "bytes_from_peer_copies",
                                              "backing_errors",
                                              "stale_detected",
                                              "not_as_listed",
                                              "copy_read_fallbacks",
                                              "lookups",
                                              "evictions",
                                              "evicted_bytes",
                                              "staging_files_staged",
                                              "staging_bytes_staged",
                                              "staging_failures",
                                              "staging_skipped",
                                              "staging_deferred_unsettled"};
  return names;
}

std::string EscapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void RenderObject(const nlohmann::json& obj, const std::string& prefix, const std::string& labels,
                  std::string* out) {
  for (const auto& [key, value] : obj.items()) {
    std::string name = prefix.empty() ? key : prefix + "_" + key;
    if (value.is_object()) {
      RenderObject(value, name, labels, out);
      continue;
    }
    if (!value.is_number() && !value.is_boolean()) continue;
    bool counter = CounterNames().count(name) > 0;
    std::string metric = "clairfs_" + name + (counter ? "_total" : "");
    std::string sample;
    if (value.is_boolean()) {
      sample = value.get<bool>() ? "1" : "0";
    } else if (value.is_number_float()) {
      char buf[64];
      snprintf(buf, sizeof(buf), "%.17g", value.get<double>());
      sample = buf;
    } else {
      sample = value.dump();
    }
    *out += "# TYPE " + metric + (counter ? " counter\n" : " gauge\n");
    *out += metric + "{" + labels + "} " + sample + "\n";
  }
}

}  // namespace

MetricsWriter::MetricsWriter(std::string path, std::string mountpoint,
                             std::function<nlohmann::json()> snapshot,
                             std::chrono::milliseconds interval)
    : path_(std::move(path)),
      mountpoint_(std::move(mountpoint)),
      snapshot_(std::move(snapshot)),
      interval_(interval) {}

MetricsWriter::~MetricsWriter() { Stop(); }

std::string MetricsWriter::Render(const nlohmann::json& status, const std::string& mountpoint) {
  std::string out;
  // Label values are UTF-8 text: the mountpoint is shown as its escaped name, then escaped for
  // the exposition format.
  RenderObject(status, "", "mountpoint=\"" + EscapeLabel(EscapeName(mountpoint)) + "\"", &out);
  return out;
}

Status MetricsWriter::WriteOnce() {
  std::string text = Render(snapshot_(), mountpoint_);
  std::string tmp = path_ + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "metrics file " + tmp);
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      unlink(tmp.c_str());
      return Status::FromErrno(err, "metrics file " + tmp);
    }
    off += static_cast<size_t>(n);
  }
  close(fd);
  if (rename(tmp.c_str(), path_.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return Status::FromErrno(err, "metrics file " + path_);
  }
  return Status::Ok();
}

Status MetricsWriter::Start() {
  CLAIRFS_RETURN_IF_ERROR(WriteOnce());
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void MetricsWriter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    Status st = WriteOnce();
    if (!st.ok() && st.code() != last_error_) {
      Log(LogLevel::kWarn, "%s (retrying every interval)", st.message().c_str());
    }
    last_error_ = st.ok() ? 0 : st.code();
    lock.lock();
  }
}

void MetricsWriter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
    unlink(path_.c_str());
  }
}

}  // namespace clairfs
