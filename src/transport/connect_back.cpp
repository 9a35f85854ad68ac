#include "ferry/transport/connect_back.hpp"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "ferry/common/random_bytes.hpp"
#include "ferry/common/text.hpp"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;

// OpenSSL's HMAC() and EVP_sha256(), loaded when first needed. ferryd links no crypto library:
// only a ferryd started by srun proves the job secret, and libcrypto (already loaded in
// ferryrun through libssh) would cost every other ferryd about 1.5 MiB of memory.
using HmacFn = unsigned char* (*)(const void* md, const void* key, int key_len,
                                  const unsigned char* data, size_t data_len, unsigned char* out,
                                  unsigned int* out_len);
using Sha256Fn = const void* (*)();
struct LibCrypto {
  HmacFn hmac = nullptr;
  Sha256Fn sha256 = nullptr;
};

const LibCrypto& libcrypto() {
  static const LibCrypto lib = [] {
    LibCrypto l;
    void* h = ::dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = ::dlopen("libcrypto.so", RTLD_NOW | RTLD_LOCAL);
    if (h) {
      l.hmac = reinterpret_cast<HmacFn>(::dlsym(h, "HMAC"));
      l.sha256 = reinterpret_cast<Sha256Fn>(::dlsym(h, "EVP_sha256"));
    }
    return l;
  }();
  return lib;
}

// Waits until `fd` is ready for `events` or the deadline passed.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
}

bool read_exact(int fd, char* out, size_t n, Clock::time_point deadline) {
  size_t got = 0;
  while (got < n) {
    if (!wait_fd(fd, POLLIN, deadline)) return false;
    const ssize_t r = ::read(fd, out + got, n - got);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

bool write_all(int fd, std::string_view data, Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < data.size()) {
    if (!wait_fd(fd, POLLOUT, deadline)) return false;
    const ssize_t r = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r <= 0) return false;
    sent += static_cast<size_t>(r);
  }
  return true;
}

// One attempt at one address; the socket is blocking again once it returns.
Result<UniqueFd> try_address(const std::string& addr, const ConnectBackTarget& t) {
  const std::string where = addr + ":" + std::to_string(t.port);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(t.port);
  if (::inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1)
    return make_error(where + ": not an IPv4 address");
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return make_error(where + ": socket: " + std::strerror(errno));
  const auto deadline = Clock::now() + t.timeout;
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 && errno != EINPROGRESS)
    return make_error(where + ": " + std::strerror(errno));
  if (!wait_fd(fd.get(), POLLOUT, deadline)) return make_error(where + ": connect timed out");
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return make_error(where + ": " + std::strerror(err));

  std::string hello(8 + kNonceSize, '\0');
  if (!read_exact(fd.get(), hello.data(), hello.size(), deadline))
    return make_error(where + ": no greeting from ferryrun");
  if (hello.compare(0, 8, kConnectMagic) != 0) return make_error(where + ": not ferryrun");
  const std::string nonce_f = hello.substr(8);
  auto nonce_d = random_bytes(kNonceSize);
  if (!nonce_d) return nonce_d.error();
  std::string reply =
      std::string(kConnectMagic) + *nonce_d + ferryd_proof(t.secret, nonce_f, *nonce_d, t.node);
  reply.push_back(static_cast<char>(t.node.size() & 0xff));
  reply += t.node;
  if (!write_all(fd.get(), reply, deadline)) return make_error(where + ": connection lost");
  std::string mac(kMacSize, '\0');
  if (!read_exact(fd.get(), mac.data(), mac.size(), deadline))
    return make_error(where + ": ferryrun refused this ferryd (wrong job secret?)");
  if (!equal_secret(mac, ferryrun_proof(t.secret, *nonce_d, nonce_f)))
    return make_error(where + ": the peer does not know the job secret");
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  const int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

std::string hmac_sha256(std::string_view key, std::string_view data) {
  const LibCrypto& c = libcrypto();
  if (!c.hmac || !c.sha256) return "";
  unsigned char out[64];
  unsigned int len = 0;
  if (!c.hmac(c.sha256(), key.data(), static_cast<int>(key.size()),
              reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len))
    return "";
  return std::string(reinterpret_cast<char*>(out), len);
}

bool have_hmac() {
  const LibCrypto& c = libcrypto();
  return c.hmac && c.sha256;
}

bool equal_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

std::string ferryd_proof(std::string_view secret, std::string_view nonce_f,
                         std::string_view nonce_d, std::string_view node) {
  return hmac_sha256(secret,
                     "ferryd" + std::string(nonce_f) + std::string(nonce_d) + std::string(node));
}

std::string ferryrun_proof(std::string_view secret, std::string_view nonce_d,
                           std::string_view nonce_f) {
  return hmac_sha256(secret, "ferryrun" + std::string(nonce_d) + std::string(nonce_f));
}

Result<UniqueFd> connect_back(const ConnectBackTarget& target) {
  if (!have_hmac())
    return make_error("cannot load libcrypto.so.3 (OpenSSL): the job secret cannot be proved");
  if (target.addresses.empty()) return make_error("no address of ferryrun to connect to");
  std::string problems;
  for (const auto& a : target.addresses) {
    auto fd = try_address(a, target);
    if (fd) return fd;
    problems += (problems.empty() ? "" : "; ") + fd.error().message;
  }
  return make_error("cannot reach ferryrun: " + problems);
}

Result<ConnectBackTarget> connect_target_from_environment() {
  ConnectBackTarget t;
  const char* secret = std::getenv(kConnectSecretVar);
  const char* port = std::getenv(kConnectPortVar);
  if (!secret || !*secret || !port) return make_error("not started by ferryrun's Slurm launcher");
  t.secret = secret;
  ::unsetenv(kConnectSecretVar);  // no rank may read it
  t.port = static_cast<uint16_t>(std::atoi(port));
  if (const char* a = std::getenv("SLURM_LAUNCH_NODE_IPADDR"); a && *a) t.addresses.emplace_back(a);
  if (const char* list = std::getenv(kConnectAddrsVar))
    for (const auto& a : split(list, ','))
      if (!a.empty() && (t.addresses.empty() || t.addresses.front() != a))
        t.addresses.emplace_back(a);
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) {
    t.node = n;
  } else {
    char buf[256] = {};
    ::gethostname(buf, sizeof buf - 1);
    t.node = buf;
  }
  if (t.node.size() > kMaxNodeName) t.node.resize(kMaxNodeName);
  return t;
}

}  // namespace ferry
