#include "ferry/pool/pool_dir.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "ferry/common/printable.hpp"
#include "ferry/common/private_dir.hpp"
#include "ferry/common/read_text_file.hpp"
#include "ferry/common/text.hpp"

namespace ferry {

namespace {

constexpr int kAnswerWithinMs = 10000;

}  // namespace

Result<std::string> pools_directory(const std::string& home, const std::string& xdg_state_home) {
  return ferry_state_dir(home, xdg_state_home, "pools", "pools");
}

Result<std::string> pools_directory() { return ferry_state_dir("pools", "pools"); }

Result<std::optional<std::string>> existing_pools_directory() {
  auto path = ferry_state_path("pools", "pools");
  if (!path) return path.error();
  if (::access(path->c_str(), F_OK) != 0) return std::optional<std::string>();
  if (Status st = make_private_dir(*path, "pools"); !st) return st.error();
  return std::optional<std::string>(*path);
}

Status check_pool_name(const std::string& name) {
  const bool ok =
      !name.empty() && name.size() <= 64 && name.front() != '.' &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
      });
  if (ok) return {};
  return make_error("bad pool name '" + printable(name) +
                    "' (letters, digits, '.', '-', '_'; at most 64)");
}

std::string pool_host_key(const HostEntry& host, int default_port,
                          const std::string& default_user) {
  const std::string& user = !host.user.empty() ? host.user : default_user;
  const int port = host.port > 0 ? host.port : default_port;
  std::string key = user.empty() ? "" : user + "@";
  key += host.name.find(':') != std::string::npos ? "[" + host.name + "]" : host.name;
  if (port > 0) key += ":" + std::to_string(port);
  return key;
}

std::vector<PoolEntry> list_pools(const std::string& pools_dir) {
  std::vector<PoolEntry> out;
  DirPtr d = open_dir(pools_dir);
  if (!d) return out;
  while (const dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    if (name.empty() || name.front() == '.' || !check_pool_name(name)) continue;
    PoolEntry p;
    p.name = name;
    p.dir = pools_dir + "/" + name;
    if (auto text = read_text_file(p.dir + "/" + kPoolHostsName, size_t{1} << 20, "host list"))
      for (auto& line : split(*text, '\n'))
        if (std::string k(trim(line)); !k.empty()) p.keys.push_back(std::move(k));
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(),
            [](const PoolEntry& a, const PoolEntry& b) { return a.name < b.name; });
  return out;
}

Result<UniqueFd> connect_pool(const std::string& dir) {
  const std::string path = dir + "/" + kPoolSocketName;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // A path too long for sun_path is reached through an O_PATH descriptor of its directory.
  UniqueFd dir_fd;
  std::string target = path;
  if (target.size() >= sizeof addr.sun_path) {
    dir_fd.reset(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd) return make_error(dir + ": " + std::strerror(errno));
    target = "/proc/self/fd/" + std::to_string(dir_fd.get()) + "/" + kPoolSocketName;
  }
  std::memcpy(addr.sun_path, target.c_str(), target.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return make_error(path + ": " + std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno == ENOENT || errno == ECONNREFUSED) return make_error("no pool answers at " + path);
    return make_error("cannot reach the pool at " + path + ": " + std::strerror(errno));
  }
  return fd;
}

Result<std::vector<std::string>> pool_request(const std::string& dir, const std::string& request) {
  auto fd = connect_pool(dir);
  if (!fd) return fd.error();
  const std::string line = request + "\n";
  if (::send(fd->get(), line.data(), line.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(line.size()))
    return make_error("the pool at " + dir + " did not take the request: " + std::strerror(errno));
  std::string in;
  std::vector<std::string> lines;
  char buf[4096];
  for (;;) {
    size_t nl = 0;
    while ((nl = in.find('\n')) != std::string::npos) {
      std::string l = in.substr(0, nl);
      in.erase(0, nl + 1);
      if (l == "end") return lines;
      const bool last = lines.empty() && (l == "ok" || l.rfind("ok ", 0) == 0 ||
                                          l.rfind("no ", 0) == 0 || l.rfind("refused", 0) == 0);
      lines.push_back(std::move(l));
      if (last) return lines;
    }
    pollfd p{fd->get(), POLLIN, 0};
    if (::poll(&p, 1, kAnswerWithinMs) <= 0)
      return make_error("the pool at " + dir + " did not answer");
    const ssize_t n = ::read(fd->get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!lines.empty()) return lines;
      return make_error("the pool at " + dir + " closed without an answer");
    }
    in.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace ferry
