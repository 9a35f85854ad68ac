#pragma once
/// \file
/// A private sshd on 127.0.0.1 for tests (needs root and /usr/sbin/sshd). Everything lives
/// in one temporary directory: host keys, client keys, authorized_keys, sshd_config, log.
/// /root/.ssh and /etc/ssh are never touched; /run/sshd is created when missing.

#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ferry::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_text(const fs::path& p, const std::string& text,
                       fs::perms perms = fs::perms::none) {
  std::ofstream(p) << text;
  if (perms != fs::perms::none) fs::permissions(p, perms);
}

/// A listening TCP socket on 127.0.0.1 (port 0 = any free one), or -1.
inline int listen_socket(int port, int* bound_port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 16) != 0) {
    ::close(fd);
    return -1;
  }
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  if (bound_port) *bound_port = ntohs(a.sin_port);
  return fd;
}

inline bool port_accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

/// Runs `io` until `done()` or `limit`; returns done().
inline bool run_until(asio::io_context& io, const std::function<bool()>& done,
                      std::chrono::milliseconds limit = 20s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    if (io.stopped()) io.restart();
    io.run_one_for(20ms);
  }
  return done();
}

/// The sshd. Keys in dir(): host_key (served), other_host_key (not served), id_main and
/// id_alt (both authorized for root).
class TestSshd {
 public:
  TestSshd() = default;
  TestSshd(const TestSshd&) = delete;
  TestSshd& operator=(const TestSshd&) = delete;
  ~TestSshd() { stop(); }

  /// Why no sshd can run here at all (not root, OpenSSH server not installed): a reason to
  /// skip. "" when it can; then a start() that fails is a test failure.
  static std::string unavailable() {
    if (geteuid() != 0) return "needs root (runs a private sshd)";
    if (access("/usr/sbin/sshd", X_OK) != 0 || access("/usr/bin/ssh-keygen", X_OK) != 0) {
      return "needs /usr/sbin/sshd and /usr/bin/ssh-keygen (openssh-server, openssh-client)";
    }
    return "";
  }

  /// Starts it on a random free port >= 20000; "" on success, else why it did not start.
  std::string start() {
    if (std::string why = unavailable(); !why.empty()) return why;
    if (std::string why = make_privsep_dir(); !why.empty()) return why;
    char tmpl[] = "/tmp/ferry-ssh-test-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return "mkdtemp failed";
    dir_ = tmpl;
    for (const char* key : {"host_key", "other_host_key", "id_main", "id_alt"}) {
      std::string cmd = "ssh-keygen -q -t ed25519 -N '' -C ferry-test -f " + (dir_ / key).string();
      if (std::system(cmd.c_str()) != 0) return "ssh-keygen failed";
    }
    write_text(dir_ / "authorized_keys",
               read_text(dir_ / "id_main.pub") + read_text(dir_ / "id_alt.pub"));
    std::mt19937 rng(std::random_device{}());
    for (int attempt = 0; attempt < 10 && pid_ <= 0; ++attempt) {
      int port = 20000 + static_cast<int>(rng() % 40000);
      int probe = listen_socket(port, nullptr);
      if (probe < 0) continue;
      ::close(probe);
      launch(port);
    }
    return pid_ > 0 ? "" : "could not start sshd: " + read_text(dir_ / "sshd.log");
  }

  void stop() {
    if (pid_ > 0) {
      // Per-connection sshds outlive their listener until their client goes (or forever
      // when a test froze them): end them too.
      for (pid_t pid : sessions()) kill(pid, SIGKILL);
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (!dir_.empty()) fs::remove_all(dir_);
    dir_.clear();
  }

  const fs::path& dir() const { return dir_; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }

  /// A known_hosts line for [127.0.0.1]:port with the public half of `key` (a file in dir).
  std::string known_line(const std::string& key) const {
    std::string pub = read_text(dir_ / (key + ".pub"));
    pub = pub.substr(0, pub.find(" ferry-test"));
    return "[127.0.0.1]:" + std::to_string(port_) + " " + pub + "\n";
  }

  /// SIGSTOPs every process below the listener (the per-connection ones); returns them.
  std::vector<pid_t> freeze_sessions() const {
    std::vector<pid_t> frozen = sessions();
    for (pid_t pid : frozen) kill(pid, SIGSTOP);
    return frozen;
  }

 private:
  // Every process below the listener, parents before their children.
  std::vector<pid_t> sessions() const {
    std::vector<pid_t> found;
    std::function<void(pid_t)> walk = [&](pid_t parent) {
      for (auto& e : fs::directory_iterator("/proc")) {
        pid_t pid = std::atoi(e.path().filename().c_str());
        if (pid <= 0) continue;
        std::string stat = read_text(e.path() / "stat");
        size_t paren = stat.rfind(')');
        if (paren == std::string::npos || paren + 2 > stat.size()) continue;
        std::istringstream fields(stat.substr(paren + 2));
        char state = 0;
        pid_t ppid = 0;
        fields >> state >> ppid;
        if (ppid == parent) {
          found.push_back(pid);
          walk(pid);
        }
      }
    };
    walk(pid_);
    return found;
  }

  // sshd refuses to start without its privilege-separation directory, root-owned and not
  // writable by others. Debian creates it only when the ssh service starts (or at boot), so
  // a fresh machine or container lacks it.
  static std::string make_privsep_dir() {
    const std::string dir = "/run/sshd";
    if (mkdir(dir.c_str(), 0755) == 0) {
      if (chmod(dir.c_str(), 0755) != 0)  // whatever the umask
        return "cannot chmod 0755 " + dir + ": " + std::strerror(errno);
    } else if (errno != EEXIST) {
      return "cannot create " + dir + ": " + std::strerror(errno);
    }
    struct stat st {};
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return dir + " exists but is not a directory";
    if (st.st_uid != 0 || (st.st_mode & 022) != 0)
      return dir + " must be root-owned and not writable by group or others (sshd refuses it)";
    return "";
  }

  void launch(int port) {
    write_text(dir_ / "sshd_config",
               "Port " + std::to_string(port) +
                   "\nListenAddress 127.0.0.1\n"
                   "HostKey " +
                   (dir_ / "host_key").string() + "\nPidFile " + (dir_ / "sshd.pid").string() +
                   "\nAuthorizedKeysFile " + (dir_ / "authorized_keys").string() +
                   "\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
                   "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
                   "PermitRootLogin prohibit-password\nMaxStartups 64\nLogLevel ERROR\n");
    const std::string bashrc = root_bashrc();
    if (!bashrc.empty()) {
      const char* path = std::getenv("PATH");
      write_text(dir_ / "bashrc",
                 "# ferry test sshd: root's .bashrc for its sessions\nexport PATH='" +
                     std::string(path ? path : "/usr/bin:/bin") + "'\n");
    }
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the test binary
      if (!bashrc.empty()) mask_bashrc(bashrc, dir_ / "bashrc");
      int log = ::open((dir_ / "sshd.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      dup2(log, 2);
      // sshd re-executes itself and insists on an absolute argv[0].
      execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-e", "-f", (dir_ / "sshd_config").c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 100; ++i) {
      if (port_accepts(port)) {
        pid_ = pid;
        port_ = port;
        return;
      }
      if (waitpid(pid, nullptr, WNOHANG) == pid) return;
      std::this_thread::sleep_for(50ms);
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }

  // bash run by sshd sources ~/.bashrc even for `ssh host cmd`, and this machine's may be
  // heavy or hang (a pyenv init waiting on a lock left by a killed shell): the sessions'
  // shells would then time out what the tests time. Like the simulated cluster's nodes, this
  // sshd gets its own mount namespace in which root's .bashrc is one line setting the test's
  // PATH; the real file is not touched. Where that fails the real one stays.
  static std::string root_bashrc() {
    const passwd* pw = getpwuid(0);
    if (pw == nullptr || pw->pw_dir == nullptr) return "";
    std::string path = std::string(pw->pw_dir) + "/.bashrc";
    return access(path.c_str(), F_OK) == 0 ? path : "";
  }

  static void mask_bashrc(const std::string& bashrc, const fs::path& replacement) {
    if (unshare(CLONE_NEWNS) != 0) return;
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return;
    mount(replacement.c_str(), bashrc.c_str(), nullptr, MS_BIND, nullptr);
  }

  fs::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace ferry::test
