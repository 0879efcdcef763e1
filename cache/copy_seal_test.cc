// CopySeal: SHA-256 against known vectors, authenticators bound to path, version and digest, and
// the key file's checks.
#include "cache/copy_seal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace clairfs {
namespace {

TEST(CopySealTest, Sha256MatchesKnownVectors) {
  Sha256Stream empty;
  EXPECT_EQ(HexOf(empty.Finish()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256Stream abc;
  abc.Update("a", 1);
  abc.Update("bc", 2);
  EXPECT_EQ(HexOf(abc.Finish()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  testing::TempDir dir;
  testing::WriteFile(dir / "f", std::string(3 << 20, 'x') + "abc");
  int fd = open((dir / "f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  uint64_t bytes = 0;
  auto digest = DigestOfFd(fd, &bytes);
  close(fd);
  ASSERT_TRUE(digest.ok());
  EXPECT_EQ(bytes, (3u << 20) + 3);
  Sha256Stream whole;
  const std::string data = std::string(3 << 20, 'x') + "abc";
  whole.Update(data.data(), data.size());
  EXPECT_EQ(*digest, whole.Finish());
  auto parsed = Sha256FromHex(HexOf(*digest));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, *digest);
  EXPECT_FALSE(Sha256FromHex("xyz").ok());
  EXPECT_FALSE(Sha256FromHex(std::string(64, 'G')).ok());
}

TEST(CopySealTest, AnAuthenticatorHoldsOnlyForItsPathVersionDigestAndKey) {
  auto key = PeerKey::FromBytes(std::string(32, 'k'));
  auto other_key = PeerKey::FromBytes(std::string(32, 'j'));
  const FileIdentity id{1000, 111, 222, 333};
  Sha256Stream s;
  s.Update("bytes", 5);
  CopySeal seal;
  seal.digest = s.Finish();
  seal.auth = key->Authenticate("train/a.jpg", id, seal.digest);
  EXPECT_TRUE(key->Verify("train/a.jpg", id, seal));
  EXPECT_FALSE(other_key->Verify("train/a.jpg", id, seal));
  EXPECT_FALSE(key->Verify("train/b.jpg", id, seal));
  for (FileIdentity changed :
       {FileIdentity{1001, 111, 222, 333}, FileIdentity{1000, 112, 222, 333},
        FileIdentity{1000, 111, 223, 333}, FileIdentity{1000, 111, 222, 334}}) {
    EXPECT_FALSE(key->Verify("train/a.jpg", changed, seal));
  }
  CopySeal other_digest = seal;
  other_digest.digest[0] ^= 1;
  EXPECT_FALSE(key->Verify("train/a.jpg", id, other_digest));
  EXPECT_EQ(key->KeyId(), PeerKey::FromBytes(std::string(32, 'k'))->KeyId());
  EXPECT_NE(key->KeyId(), other_key->KeyId());
  EXPECT_EQ(key->KeyId().find("kkkk"), std::string::npos);
}

TEST(CopySealTest, KeyFilesMustBePrivateRegularAndLongEnough) {
  testing::TempDir dir;
  const std::string good = dir / "good.key";
  testing::WriteFile(good, std::string(32, 'k'));
  ASSERT_EQ(chmod(good.c_str(), 0600), 0);
  auto loaded = PeerKey::Load(good, getuid());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ((*loaded)->KeyId(), PeerKey::FromBytes(std::string(32, 'k'))->KeyId());

  const std::string open_to_all = dir / "open.key";
  testing::WriteFile(open_to_all, std::string(32, 'k'));
  ASSERT_EQ(chmod(open_to_all.c_str(), 0644), 0);
  auto st = PeerKey::Load(open_to_all, getuid());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), EPERM);
  EXPECT_NE(st.status().message().find("chmod 600"), std::string::npos);

  const std::string short_key = dir / "short.key";
  testing::WriteFile(short_key, "too short");
  ASSERT_EQ(chmod(short_key.c_str(), 0600), 0);
  EXPECT_FALSE(PeerKey::Load(short_key, getuid()).ok());

  const std::string link = dir / "link.key";
  ASSERT_EQ(symlink(good.c_str(), link.c_str()), 0);
  EXPECT_FALSE(PeerKey::Load(link, getuid()).ok());
  EXPECT_EQ(PeerKey::Load(dir / "missing.key", getuid()).status().code(), ENOENT);
  EXPECT_FALSE(PeerKey::Load(dir.path(), getuid()).ok());
}

}  // namespace
}  // namespace clairfs
