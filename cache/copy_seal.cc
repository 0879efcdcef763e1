// CopySeal, Sha256Stream and PeerKey (see copy_seal.h).
#include "cache/copy_seal.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "planner/base/name_escape.h"

namespace clairfs {
namespace {

constexpr size_t kMinKeyBytes = 32;
constexpr size_t kMaxKeyBytes = 4096;
constexpr char kSealLabel[] = "clairfs copy seal v1";
constexpr char kKeyIdLabel[] = "clairfs peer key id v1";

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

}  // namespace

struct Sha256Stream::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256Stream::Sha256Stream() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  if (impl_->ctx != nullptr) EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr);
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256Stream::Update(const void* data, size_t size) {
  if (impl_->ctx != nullptr && size > 0) EVP_DigestUpdate(impl_->ctx, data, size);
}

Sha256 Sha256Stream::Finish() {
  Sha256 out{};
  unsigned int len = 0;
  if (impl_->ctx != nullptr) EVP_DigestFinal_ex(impl_->ctx, out.data(), &len);
  return out;
}

Result<Sha256> DigestOfFd(int fd, uint64_t* bytes) {
  // Every copy staged on a mount with a peer key passes through here. One buffer per thread, left
  // uninitialised: a fresh zeroed 1 MiB vector per copy was mapped, faulted in, zeroed and
  // unmapped each time (the daemon maps blocks over 256 KiB): 5% of the daemons' CPU samples in
  // `clairfs bench peers` (perf, docs/BENCHMARKS.md).
  constexpr size_t kChunk = size_t{256} << 10;
  thread_local const std::unique_ptr<char[]> buf(new char[kChunk]);
  Sha256Stream stream;
  uint64_t offset = 0;
  for (;;) {
    ssize_t n = pread(fd, buf.get(), kChunk, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, "reading a copy for its digest");
    if (n == 0) break;
    stream.Update(buf.get(), static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  if (bytes != nullptr) *bytes = offset;
  return stream.Finish();
}

Result<std::shared_ptr<const PeerKey>> PeerKey::Load(const std::string& path, uid_t owner) {
  const std::string name = EscapeName(path);
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::FromErrno(errno, "peer key " + name);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    Status err = Status::FromErrno(errno, "peer key " + name);
    close(fd);
    return err;
  }
  auto refuse = [&](const std::string& why) {
    close(fd);
    return Status::Error(EPERM, "peer key " + name + ": " + why);
  };
  if (!S_ISREG(st.st_mode)) return refuse("not a regular file");
  if (st.st_uid != 0 && st.st_uid != owner) {
    return refuse("owned by uid " + std::to_string(st.st_uid) + ", not by root");
  }
  if ((st.st_mode & 077) != 0) {
    return refuse("readable or writable by others (chmod 600 it: docs/ADMIN.md, \"The peer key\")");
  }
  if (st.st_size < static_cast<off_t>(kMinKeyBytes) ||
      st.st_size > static_cast<off_t>(kMaxKeyBytes)) {
    return refuse("must hold 32 to 4096 bytes (it holds " + std::to_string(st.st_size) + ")");
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status err = n < 0 ? Status::FromErrno(errno, "reading peer key " + name)
                         : Status::Error(EIO, "peer key " + name + " shrank while read");
      OPENSSL_cleanse(bytes.data(), bytes.size());
      close(fd);
      return err;
    }
    got += static_cast<size_t>(n);
  }
  close(fd);
  return std::shared_ptr<const PeerKey>(new PeerKey(std::move(bytes)));
}

std::shared_ptr<const PeerKey> PeerKey::FromBytes(std::string bytes) {
  return std::shared_ptr<const PeerKey>(new PeerKey(std::move(bytes)));
}

Sha256 PeerKey::Authenticate(std::string_view path, const FileIdentity& identity,
                             const Sha256& digest) const {
  // Fixed-width fields after a length-prefixed path: no two inputs share an encoding.
  std::string message(kSealLabel, sizeof(kSealLabel));
  PutU64(&message, path.size());
  message.append(path);
  PutU64(&message, identity.size);
  PutU64(&message, static_cast<uint64_t>(identity.mtime_ns));
  PutU64(&message, static_cast<uint64_t>(identity.ctime_ns));
  PutU64(&message, identity.ino);
  message.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  Sha256 out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), bytes_.data(), static_cast<int>(bytes_.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), out.data(), &len);
  return out;
}

bool PeerKey::Verify(std::string_view path, const FileIdentity& identity,
                     const CopySeal& seal) const {
  const Sha256 expected = Authenticate(path, identity, seal.digest);
  return CRYPTO_memcmp(expected.data(), seal.auth.data(), expected.size()) == 0;
}

std::string PeerKey::KeyId() const {
  Sha256 out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), bytes_.data(), static_cast<int>(bytes_.size()),
       reinterpret_cast<const unsigned char*>(kKeyIdLabel), sizeof(kKeyIdLabel) - 1, out.data(),
       &len);
  return HexOf(out).substr(0, 16);
}

std::string HexOf(const Sha256& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

Result<Sha256> Sha256FromHex(std::string_view hex) {
  if (hex.size() != 64) return Status::Invalid("a digest is 64 hex digits");
  Sha256 out{};
  for (size_t i = 0; i < 32; ++i) {
    int v = 0;
    for (size_t j = 0; j < 2; ++j) {
      const char c = hex[2 * i + j];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return Status::Invalid("a digest is 64 lowercase hex digits");
      v = v * 16 + d;
    }
    out[i] = static_cast<uint8_t>(v);
  }
  return out;
}

}  // namespace clairfs
