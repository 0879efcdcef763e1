// CopySeal: what proves a staged copy's bytes to another node's daemon (docs/PEERS.md,
// "Digests and authenticators").
//
// A seal is the SHA-256 digest of a copy's bytes and an authenticator: HMAC-SHA256 under the site's
// peer key over a fixed label, the dataset path, the listed version of the backing file (size,
// mtime, ctime, backing inode) and the digest. Only a daemon holding the key (root-only) can make
// one, so an agent that moves bytes between nodes cannot make a node publish bytes the PFS did not
// hold. Crypto is OpenSSL's libcrypto; nothing here is hand-written crypto.
//
// PeerKey::Load refuses a key file that is not a regular file owned by root (or by the mounting
// user for a non-root mount) with no permission for group or others, or that holds fewer than
// 32 bytes; the key's bytes never leave the process (KeyId is an HMAC of a fixed text, safe to
// compare across nodes). Thread-safety: a PeerKey is immutable after Load and may be used from any
// thread; the digest functions keep no state.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cache/node_attr.h"
#include "planner/base/status.h"

namespace clairfs {

using Sha256 = std::array<uint8_t, 32>;

struct CopySeal {
  Sha256 digest{};
  Sha256 auth{};
  bool operator==(const CopySeal&) const = default;
};

// Incremental SHA-256 of a byte stream.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void Update(const void* data, size_t size);
  Sha256 Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The digest of the whole file behind `fd` (read with pread from offset 0), and its length.
Result<Sha256> DigestOfFd(int fd, uint64_t* bytes = nullptr);

class PeerKey {
 public:
  // Reads the key at `path` (see the top of this file for what is refused, and why).
  static Result<std::shared_ptr<const PeerKey>> Load(const std::string& path, uid_t owner);
  // For tests: a key from bytes.
  static std::shared_ptr<const PeerKey> FromBytes(std::string bytes);

  Sha256 Authenticate(std::string_view path, const FileIdentity& identity,
                      const Sha256& digest) const;
  bool Verify(std::string_view path, const FileIdentity& identity, const CopySeal& seal) const;
  // An identifier of the key that reveals nothing of it (equal on nodes with the same key).
  std::string KeyId() const;

 private:
  explicit PeerKey(std::string bytes) : bytes_(std::move(bytes)) {}
  std::string bytes_;
};

std::string HexOf(const Sha256& bytes);
// Parses 64 hex digits; EINVAL otherwise.
Result<Sha256> Sha256FromHex(std::string_view hex);

}  // namespace clairfs
