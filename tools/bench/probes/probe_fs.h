// ProbeFs: the minimal read-only FUSE filesystem served by fuse_uring_probe, independent of how
// requests reach it (read()/writev() on /dev/fuse, or FUSE-over-io_uring ring entries).
//
// Namespace: the root (inode 1) holds `stat` (inode 2, 0 bytes, attribute timeout 0, so every
// stat() of it is one GETATTR round trip) and `f00000`... (inode 3 + i), one per file of the
// backing directory `backing_dir/f00000`...; all names and other attributes are cached by the
// kernel for a day. Two ways to serve file data:
// - kMemory: READs are answered from memory (the same deterministic bytes as the backing
//   files); OPEN replies FOPEN_KEEP_CACHE, so warm files send OPEN and RELEASE only.
// - kPassthrough: kernel passthrough to the backing file (the daemon opens and registers each
//   backing file at its first OPEN and keeps the id for the life of the mount, as clairfs keeps
//   held copies); warm files send OPEN and RELEASE only.
// - kNoOpen: OPEN and FLUSH are answered ENOSYS, so the kernel opens files without the daemon
//   from then on (no OPEN, RELEASE or FLUSH; pages kept across opens), and READs are answered
//   from memory: the floor of clairfs's no-open mode (docs/NO-OPEN.md), a READ round trip per
//   uncached range and nothing else.
// Every OPEN reply carries FOPEN_NOFLUSH (no FLUSH round trip at close).
//
// Requests are given split the way the io_uring transport delivers them: the fuse_in_header,
// the opcode's fixed argument struct (`op`, empty for LOOKUP) and the rest (`rest`, e.g. a
// name). The reply's payload is written into the caller's buffer, which may be the buffer
// `rest` points into (the ring's payload buffer): Handle() reads all of `rest` before writing.
// Handle() never throws and may be called from any thread concurrently. Counters are atomics.
#pragma once

#include <linux/fuse.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace clairfs::probe {

enum class ServeMode { kMemory, kPassthrough, kNoOpen };

// Which transport delivered a request (for the per-transport counters).
enum class Transport { kDevFuse = 0, kRing = 1 };

// The deterministic byte at `offset` of file `index` (the backing files hold the same bytes).
inline char FileByte(size_t index, uint64_t offset) {
  return static_cast<char>((index * 131 + offset * 7 + (offset >> 12)) & 0xff);
}

struct Reply {
  int error = 0;      // positive errno, or 0
  size_t size = 0;    // payload bytes written to the buffer
  bool none = false;  // no reply at all (FORGET, BATCH_FORGET, INTERRUPT)
};

class ProbeFs {
 public:
  ProbeFs(std::string backing_dir, size_t files, size_t file_size, ServeMode mode);
  ~ProbeFs();
  ProbeFs(const ProbeFs&) = delete;
  ProbeFs& operator=(const ProbeFs&) = delete;

  // The mount's /dev/fuse fd (for BACKING_OPEN), set before the first request.
  void set_fuse_fd(int fd) { fuse_fd_ = fd; }
  ServeMode mode() const { return mode_; }

  // Size of the fixed argument struct the kernel puts first for `opcode` (0 when none): where
  // the rest begins in a request read from /dev/fuse.
  static size_t OpArgSize(uint32_t opcode);

  // Serves one request (not INIT). `out` has room for `out_cap` payload bytes.
  Reply Handle(const struct fuse_in_header& in, const char* op, const char* rest, char* out,
               size_t out_cap, Transport transport);

  // Requests served per transport since the start (all opcodes).
  uint64_t requests(Transport t) const {
    return requests_[static_cast<int>(t)].load(std::memory_order_relaxed);
  }
  uint64_t opens() const { return opens_.load(std::memory_order_relaxed); }
  uint64_t reads() const { return reads_.load(std::memory_order_relaxed); }
  // Passthrough registrations that failed (then the open is served from memory).
  uint64_t backing_failures() const { return backing_failures_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint64_t kRootIno = 1, kStatIno = 2, kFirstFileIno = 3;
  bool IsFile(uint64_t ino) const { return ino >= kFirstFileIno && ino < kFirstFileIno + files_; }
  void FillAttr(uint64_t ino, struct fuse_attr* attr) const;
  Reply Lookup(const char* name, char* out, size_t cap);
  Reply GetAttr(uint64_t ino, char* out, size_t cap);
  Reply Open(uint64_t ino, char* out, size_t cap);
  Reply Read(uint64_t ino, const struct fuse_read_in& in, char* out, size_t cap);
  // The inode's backing id, registering the backing file at the first call; -1 on failure.
  int BackingId(uint64_t ino);

  std::string backing_dir_;
  size_t files_;
  size_t file_size_;
  ServeMode mode_;
  int fuse_fd_ = -1;
  std::mutex backing_mu_;         // guards backing_ids_ (taken only at first opens)
  std::vector<int> backing_ids_;  // per file: backing id, -1 until registered
  std::vector<int> backing_fds_;  // per file: the open backing file, -1 until registered
  std::array<std::atomic<uint64_t>, 2> requests_{};
  std::atomic<uint64_t> opens_{0};
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> backing_failures_{0};
};

}  // namespace clairfs::probe
