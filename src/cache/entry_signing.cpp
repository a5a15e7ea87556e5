// Signing entries with HMAC-SHA256 (see the header).
#include "cache/entry_signing.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln::cache {

namespace {
constexpr size_t minimum_secret_bytes = 32;
}  // namespace

std::optional<SigningKey> read_signing_key(const std::string& file, std::string& problem) {
  int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    problem = std::string("it cannot be opened: ") + std::strerror(errno);
    return std::nullopt;
  }
  struct stat status {};
  std::string secret;
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    problem = "it is not a regular file";
  } else if (status.st_uid != ::geteuid()) {
    problem = "it belongs to user id " + std::to_string(status.st_uid) + ", not to this user";
  } else if (status.st_mode & (S_IRWXG | S_IRWXO)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(status.st_mode & 07777));
    problem = std::string("others can read or write it (mode ") + mode + "): a secret must be private (chmod 600)";
  } else {
    secret.resize(static_cast<size_t>(status.st_size));
    size_t done = 0;
    while (done < secret.size()) {
      ssize_t got = ::read(fd, secret.data() + done, secret.size() - done);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      done += static_cast<size_t>(got);
    }
    secret.resize(done);
    if (secret.size() < minimum_secret_bytes)
      problem = "it holds " + std::to_string(secret.size()) + " bytes; a key needs at least " +
                std::to_string(minimum_secret_bytes) + " (for example: head -c 32 /dev/urandom > FILE)";
  }
  ::close(fd);
  if (!problem.empty()) return std::nullopt;
  return SigningKey{std::move(secret), file};
}

std::string sign(const SigningKey& key, std::string_view bytes) {
  unsigned char tag[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.secret.data(), static_cast<int>(key.secret.size()),
       reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), tag, &length);
  return std::string(reinterpret_cast<const char*>(tag), length);
}

bool verifies(const SigningKey& key, std::string_view bytes, std::string_view tag) {
  std::string expected = sign(key, bytes);
  return tag.size() == expected.size() && CRYPTO_memcmp(expected.data(), tag.data(), tag.size()) == 0;
}

}  // namespace kiln::cache
