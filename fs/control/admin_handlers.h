// Admin ops on the control socket: "ls", "stage", "stage_progress", "evict", "pin", "unpin".
//
// Paths in requests are escaped names (planner/name_escape.h: "\\" a backslash, "\xHH" any
// byte; raw UTF-8 passes), relative to the mount ("a/b", "." for the root) or absolute under the
// mountpoint; a bad escape, an empty path in "paths", "..", absolute paths elsewhere, NUL bytes
// and more than kMaxRequestPaths paths are refused with EINVAL before anything runs. Every path
// in a reply or an error message is escaped the same way. Directories expand recursively to their
// regular files (through the manifest, no backing-store call). Any path not in the manifest refuses
// the whole request (ENOENT), so a request either runs on everything it names or on nothing.
//
//   ls      (anyone) {path, recursive, filter: all|staged|unstaged, limit}
//           -> {entries: [{path, type, size, staged, pinned, heat_per_byte}], truncated}
//           heat_per_byte: the file's imported Darshan heat, null without heat. What callers
//           other than root and the owner see is limited as fs/caller_scope.h says: EACCES on a
//           private mount; on an allow_other mount what the kernel would show them, and for a
//           file they may not read staged, pinned and heat_per_byte are null (unknown to them;
//           such files never match a staged/unstaged filter).
//   stage   (owner)  {paths, priority: high|normal|low, hot, fit}
//           -> {id, files, bytes, already_staged[, hot: {hot_files, not_hot, no_room}]}
//           Files are queued on the mount's stager; the request's progress is kept by id.
//           hot: only files with heat (heat_per_byte > 0), queued hottest first; each may evict
//           strictly colder copies, never hotter or equally hot ones (the heat eviction policy);
//           refused (EBUSY) while a plan is active, ENODATA without heat. fit (with hot): the
//           hottest files that fit in the room left without evicting, taken in heat order (a file
//           that does not fit is left out and colder ones that still fit are taken); they are
//           staged only into free room, never evicting. Files of a hot request that find no room
//           (or exceed the capacity) are counted as skipped, not failed.
//   stage_progress (owner) {id} -> {files_total, bytes_total, files_done, bytes_done,
//           files_failed, files_skipped, failed: [{path, errno, error}], pending, done}; once
//           done also {files_resident, files_evicted_again, evictions_while_staging,
//           capacity_bytes}: how many of the request's files are staged now, how many staged
//           files were evicted again before the request finished (a request larger than the
//           capacity), and how many copies the cache evicted while it ran (these and others).
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

#include <sys/types.h>

#include <functional>
#include <string>

#include "cache/content_store.h"
#include "cache/heat_store.h"
#include "cache/manifest.h"
#include "cache/stager.h"
#include "fs/control/control_server.h"

namespace clairfs {

constexpr size_t kMaxRequestPaths = 65536;

struct AdminSources {
  std::string mountpoint;  // canonical
  Manifest* manifest;
  ContentStore* store;
  Stager* stager;
  HeatStore* heat = nullptr;          // null: no heat (ls shows none, stage --hot is refused)
  std::function<bool()> plan_active;  // may be empty (no plan ever)
  uid_t owner_uid = 0;                // the user who mounted: they and root see everything
  bool allow_other = false;           // the mount lets other users in (fs/caller_scope.h)
};

void RegisterAdminHandlers(ControlServer* server, AdminSources sources);

// Maps a request path (raw bytes, already unescaped) to a dataset-relative path ("" = root).
// Exposed for tests.
Result<std::string> NormalizeRequestPath(const std::string& mountpoint, const std::string& path);

}  // namespace clairfs
