#include "ferry/rendezvous/peer_auth.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>

#include "ferry/common/environ.hpp"
#include "ferry/common/posix_handles.hpp"
#include "ferry/common/random_bytes.hpp"
#include "ferry/common/read_text_file.hpp"

namespace ferry {
namespace {

constexpr std::size_t kRecentPids = 32;

// A socket table holds a line (~150 bytes) per socket of the network namespace; this bound
// is far above any real one and only stops a broken or fake file from eating memory.
constexpr std::size_t kSocketTableLimit = 256u << 20;
constexpr std::size_t kChildrenLimit = 1u << 20;

// /proc/net/tcp prints each address as the 32-bit word holding the network-order bytes,
// with %08X in host order (so 127.0.0.1 reads "0100007F" on little-endian machines), and
// the port in host order (net/ipv4/tcp_ipv4.c get_tcp4_sock).
uint32_t proc_word_to_addr(uint32_t word) { return ntohl(word); }

// One "ADDR:PORT" field of net/tcp (8 hex digits) or of net/tcp6 (32 hex digits, only
// IPv4-mapped addresses ::ffff:a.b.c.d are accepted, as a client may connect that way).
bool parse_endpoint(std::string_view f, uint32_t& addr, uint16_t& port) {
  auto colon = f.find(':');
  if (colon == std::string_view::npos || f.size() - colon - 1 != 4) return false;
  std::string_view a = f.substr(0, colon);
  auto hex = [](std::string_view s, uint64_t& out) {
    out = 0;
    if (s.empty() || s.size() > 16) return false;
    for (char c : s) {
      int d = (c >= '0' && c <= '9')   ? c - '0'
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                       : -1;
      if (d < 0) return false;
      out = out * 16 + static_cast<uint64_t>(d);
    }
    return true;
  };
  uint64_t p = 0, w = 0;
  if (!hex(f.substr(colon + 1), p)) return false;
  port = static_cast<uint16_t>(p);
  if (a.size() == 8) {
    if (!hex(a, w)) return false;
    addr = proc_word_to_addr(static_cast<uint32_t>(w));
    return true;
  }
  if (a.size() == 32) {
    uint64_t w0 = 0, w1 = 0, w2 = 0;
    if (!hex(a.substr(0, 8), w0) || !hex(a.substr(8, 8), w1) || !hex(a.substr(16, 8), w2) ||
        !hex(a.substr(24, 8), w))
      return false;
    if (w0 != 0 || w1 != 0 || proc_word_to_addr(static_cast<uint32_t>(w2)) != 0xffff) return false;
    addr = proc_word_to_addr(static_cast<uint32_t>(w));
    return true;
  }
  return false;
}

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string endpoint_text(uint32_t addr, uint16_t port) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u:%u", addr >> 24, (addr >> 16) & 255,
                (addr >> 8) & 255, addr & 255, port);
  return buf;
}

// Asks the kernel for exactly one TCP socket (NETLINK_SOCK_DIAG without NLM_F_DUMP: a hash
// lookup, microseconds). Reading /proc/net/tcp instead walks every socket of the network
// namespace and took ~1.7 ms per read on a test machine: too slow for gloo, which opens a
// connection per request and polls every 10 ms per rank. Nothing means "ask /proc".
std::optional<std::pair<uint64_t, uint32_t>> sock_diag_lookup(const TcpConnection& conn) {
  UniqueFd nl(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!nl) return std::nullopt;
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof msg;
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST;
  msg.req.sdiag_family = AF_INET;
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = ~0u;
  // "src" is the looked-up socket's own end: the client's.
  msg.req.id.idiag_sport = htons(conn.client_port);
  msg.req.id.idiag_dport = htons(conn.server_port);
  msg.req.id.idiag_src[0] = htonl(conn.client_addr);
  msg.req.id.idiag_dst[0] = htonl(conn.server_addr);
  msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  std::optional<std::pair<uint64_t, uint32_t>> out;
  if (::sendto(nl.get(), &msg, sizeof msg, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) == static_cast<ssize_t>(sizeof msg)) {
    alignas(nlmsghdr) char buf[8192];
    ssize_t n = ::recv(nl.get(), buf, sizeof buf, 0);
    auto* h = reinterpret_cast<nlmsghdr*>(buf);
    if (n >= static_cast<ssize_t>(sizeof(nlmsghdr)) && NLMSG_OK(h, static_cast<unsigned>(n))) {
      if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
          h->nlmsg_len >= NLMSG_LENGTH(sizeof(inet_diag_msg))) {
        auto* d = static_cast<inet_diag_msg*>(NLMSG_DATA(h));
        out = std::make_pair(static_cast<uint64_t>(d->idiag_inode), d->idiag_uid);
      }
    }
  }
  return out;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

ProcPeerIdentifier::ProcPeerIdentifier(std::string proc_root)
    : root_(std::move(proc_root)), sock_diag_(root_ == "/proc") {}

Result<ProcPeerIdentifier::SocketEntry> ProcPeerIdentifier::find_socket(
    const TcpConnection& conn) const {
  if (sock_diag_) {
    if (auto hit = sock_diag_lookup(conn)) {
      if (hit->first == 0)
        return make_error("the client socket of " +
                          endpoint_text(conn.client_addr, conn.client_port) +
                          " has no owner any more (closed)");
      return SocketEntry{hit->first, hit->second};
    }
    // Not found (an IPv6 socket to ::ffff:127.0.0.1?) or netlink refused: the tables say.
  }
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    auto text = read_text_file(root_ + table, kSocketTableLimit, "TCP socket table");
    if (!text) continue;  // no IPv6 in this kernel or namespace
    std::string_view rest = *text;
    bool header = true;
    while (!rest.empty()) {
      auto nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
      if (header) {
        header = false;
        continue;
      }
      // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
      auto f = fields(line);
      if (f.size() < 10) continue;
      uint32_t la = 0, ra = 0;
      uint16_t lp = 0, rp = 0;
      if (!parse_endpoint(f[1], la, lp) || !parse_endpoint(f[2], ra, rp)) continue;
      if (la != conn.client_addr || lp != conn.client_port || ra != conn.server_addr ||
          rp != conn.server_port)
        continue;
      SocketEntry e;
      e.uid = static_cast<uint32_t>(std::strtoul(std::string(f[7]).c_str(), nullptr, 10));
      e.inode = std::strtoull(std::string(f[9]).c_str(), nullptr, 10);
      if (e.inode == 0)
        return make_error("the client socket of " +
                          endpoint_text(conn.client_addr, conn.client_port) +
                          " has no owner any more (closed)");
      return e;
    }
  }
  return make_error("no client socket " + endpoint_text(conn.client_addr, conn.client_port) +
                    " -> " + endpoint_text(conn.server_addr, conn.server_port) +
                    " on this host (not a local process, or another network namespace)");
}

bool ProcPeerIdentifier::holds_socket(pid_t pid, const std::string& link) const {
  DirPtr fds = open_dir(root_ + "/" + std::to_string(pid) + "/fd");
  if (!fds) return false;  // gone, or another user's process
  char target[64];
  while (dirent* e = ::readdir(fds.get())) {
    if (e->d_name[0] == '.') continue;
    ssize_t n = ::readlinkat(::dirfd(fds.get()), e->d_name, target, sizeof target);
    if (n == static_cast<ssize_t>(link.size()) && std::memcmp(target, link.data(), n) == 0)
      return true;
  }
  return false;
}

std::vector<pid_t> ProcPeerIdentifier::descendants(const std::vector<pid_t>& roots) const {
  std::vector<pid_t> out;
  std::set<pid_t> seen;
  std::vector<pid_t> todo(roots.begin(), roots.end());
  while (!todo.empty() && out.size() < 4096) {
    pid_t p = todo.back();
    todo.pop_back();
    if (p <= 0 || !seen.insert(p).second) continue;
    out.push_back(p);
    // Every thread's children file: a child is listed under the thread that forked it.
    const std::string tasks = root_ + "/" + std::to_string(p) + "/task";
    DirPtr threads = open_dir(tasks);
    if (!threads) continue;
    while (dirent* e = ::readdir(threads.get())) {
      if (e->d_name[0] == '.') continue;
      auto text = read_text_file(tasks + "/" + e->d_name + "/children", kChildrenLimit,
                                 "list of child processes");
      if (!text) continue;
      for (auto f : fields(*text))
        if (auto child = parse_pid(f)) todo.push_back(*child);
    }
  }
  return out;
}

void ProcPeerIdentifier::remember(pid_t pid) {
  auto it = std::find(recent_.begin(), recent_.end(), pid);
  if (it != recent_.end()) recent_.erase(it);
  recent_.push_front(pid);
  if (recent_.size() > kRecentPids) recent_.pop_back();
}

Result<pid_t> ProcPeerIdentifier::peer_pid(const TcpConnection& conn) {
  // The socket's inode and the processes' fd tables are read at different moments, so a
  // holder that does not show is looked for once more, socket lookup included, before the
  // connection is refused (a refused gloo or PMI request fails the rank's job).
  auto first = find_socket(conn);
  if (!first) return first.error();
  auto pid = find_holder(*first);
  if (!pid || *pid > 0) return pid;
  auto again = find_socket(conn);
  if (!again) return again.error();
  pid = find_holder(*again);
  if (!pid || *pid > 0) return pid;
  return make_error("no readable process holds the client socket (uid " +
                    std::to_string(again->uid) + ", socket inode " + std::to_string(first->inode) +
                    ", then " + std::to_string(again->inode) + " looked up again)");
}

// The process holding `sock`, 0 when none shows: recent peers first, then the ranks' process
// trees, then every process of the socket's owner.
Result<pid_t> ProcPeerIdentifier::find_holder(const SocketEntry& sock) {
  const std::string link = "socket:[" + std::to_string(sock.inode) + "]";
  std::set<pid_t> tried;
  auto try_pid = [&](pid_t p) {
    if (!tried.insert(p).second) return false;
    return holds_socket(p, link);
  };
  for (pid_t p : recent_)
    if (try_pid(p)) {
      last_path_ = "recent";
      remember(p);
      return p;
    }
  for (pid_t p : descendants(candidates_))
    if (try_pid(p)) {
      last_path_ = "ranks";
      remember(p);
      return p;
    }
  auto pids = list_pids(root_);
  if (!pids) return pids.error();
  for (pid_t p : *pids) {
    if (tried.contains(p)) continue;
    struct stat st {};
    const std::string dir = root_ + "/" + std::to_string(p);
    if (::stat(dir.c_str(), &st) != 0 || st.st_uid != sock.uid) continue;
    if (try_pid(p)) {
      last_path_ = "scan";
      remember(p);
      return p;
    }
  }
  return 0;
}

Result<std::vector<std::string>> ProcPeerIdentifier::environment(pid_t pid) {
  return read_environ(pid, root_);
}

Result<pid_t> PeerAuthenticator::authenticate(const TcpConnection& conn) {
  if (secret_.empty()) return make_error("no job secret configured");
  if (conn.client_addr >> 24 != 127) return make_error("connection from a non-loopback address");
  auto pid = identifier_.peer_pid(conn);
  if (!pid) return pid.error();
  auto env = identifier_.environment(*pid);
  if (!env) return make_error("pid " + std::to_string(*pid) + ": " + env.error().message);
  // The first entry counts, as for getenv() in the rank.
  for (const auto& e : *env)
    if (auto value = env_entry_value(e, kJobSecretVar))
      return constant_time_equal(*value, secret_)
                 ? Result<pid_t>(*pid)
                 : Result<pid_t>(make_error("pid " + std::to_string(*pid) + " carries " +
                                            kJobSecretVar + " of another job"));
  return make_error("pid " + std::to_string(*pid) + " is not a rank of this job (no " +
                    kJobSecretVar + ")");
}

Result<std::string> new_job_secret() {
  auto bytes = random_bytes(32);
  if (!bytes) return bytes.error();
  return hex_text(*bytes);
}

}  // namespace ferry
