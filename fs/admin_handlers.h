// Admin ops on the control socket: "ls", "stage", "stage_progress", "evict", "pin", "unpin".
//
// Paths in requests are relative to the mount ("a/b", "" or "." for the root) or absolute under
// the mountpoint; "..", absolute paths elsewhere, NUL bytes and more than kMaxRequestPaths paths
// are refused with EINVAL before anything runs. Directories expand recursively to their regular
// files (through the manifest, no backing-store call). Any path not in the manifest refuses the
// whole request (ENOENT), so a request either runs on everything it names or on nothing.
//
//   ls      (anyone) {path, recursive, filter: all|staged|unstaged, limit}
//           -> {entries: [{path, type, size, staged, pinned}], truncated}
//   stage   (owner)  {paths, priority: high|normal|low} -> {id, files, bytes, already_staged}
//           Files are queued on the mount's stager; the request's progress is kept by id.
//   stage_progress (anyone) {id} -> {files_total, bytes_total, files_done, bytes_done,
//           files_failed, failed: [{path, errno, error}], pending, done}
//   evict   (owner)  {paths | all: true, force} -> {evicted, evicted_bytes, skipped_pinned,
//           not_staged}. Pinned copies are skipped unless force (then also unpinned: removed).
//           Pending staging of an evicted path is cancelled. Readers holding the file open keep
//           reading the unlinked copy, so eviction never changes bytes being read.
//   pin     (owner)  {paths} -> {pinned, pinned_bytes_total}. Every named file must be staged
//           (else ENODATA, nothing pinned: stage first); refused with ENOSPC if the pinned total
//           would exceed the cache capacity.
//   unpin   (owner)  {paths} -> {unpinned, not_staged}
//
// Thread-safety: handlers run on the control server's client threads; the shared state (stage
// requests by id) has its own mutex, and pin/unpin are serialised so the capacity check holds.
// The objects in AdminSources must outlive the server (Stop() joins all handler threads).
#pragma once

#include <string>

#include "cache/content_store.h"
#include "cache/manifest.h"
#include "cache/stager.h"
#include "fs/control_server.h"

namespace clairfs {

constexpr size_t kMaxRequestPaths = 65536;

struct AdminSources {
  std::string mountpoint;  // canonical
  Manifest* manifest;
  ContentStore* store;
  Stager* stager;
};

void RegisterAdminHandlers(ControlServer* server, AdminSources sources);

// Maps a request path to a dataset-relative path ("" = root). Exposed for tests.
Result<std::string> NormalizeRequestPath(const std::string& mountpoint, const std::string& path);

}  // namespace clairfs
