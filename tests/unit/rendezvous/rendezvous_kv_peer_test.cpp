// Real-peer test: tests/e2e/programs/gloo_kv_client.py (which speaks exactly like horovod's
// gloo HTTPStore) against the HTTP parser, the peer authenticator over the real /proc and
// the KV store, wired in one poll loop the way ferryd + front end will be. Ranks started
// with the job secret rendezvous in the global/local/cross scopes; the client's own probes
// without (or with a wrong) secret must get 403. Skipped without /usr/bin/python3.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ferry/rendezvous/framework_env.hpp"
#include "ferry/rendezvous/http_request.hpp"
#include "ferry/rendezvous/kv_store.hpp"
#include "ferry/rendezvous/peer_auth.hpp"

extern char** environ;

namespace ferry {
namespace {

struct Conn {
  int fd = -1;
  HttpRequestParser parser;
  bool authenticated = false;
};

TEST(GlooKvPeer, RanksRendezvousAndStrangersGet403) {
  const char* py = "/usr/bin/python3";
  if (::access(py, X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const std::string client =
      std::string(FERRY_SOURCE_DIR) + "/tests/e2e/programs/gloo_kv_client.py";

  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof a;
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 128), 0);
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &alen);
  const uint16_t port = ntohs(a.sin_port);

  auto secret = new_job_secret();
  ASSERT_TRUE(secret);
  // Two simulated hosts of two ranks: a:2,b:2.
  struct R {
    int rank, local, cross, cross_size;
    std::string host;
  };
  std::vector<R> ranks = {
      {0, 0, 0, 2, "a"}, {1, 1, 0, 2, "a"}, {2, 0, 1, 2, "b"}, {3, 1, 1, 2, "b"}};
  KvStore store;
  store.set_scope_size("global", 4);
  store.set_scope_size("local_a", 2);
  store.set_scope_size("local_b", 2);
  store.set_scope_size("cross_0", 2);
  store.set_scope_size("cross_1", 2);

  ProcPeerIdentifier ids;
  PeerAuthenticator auth(ids, *secret);
  std::vector<pid_t> pids;
  for (const auto& r : ranks) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    for (auto& kv : horovod_environment(port, *secret, {})) env.push_back(kv);
    for (auto kv :
         {"HOROVOD_RANK=" + std::to_string(r.rank), std::string("HOROVOD_SIZE=4"),
          "HOROVOD_LOCAL_RANK=" + std::to_string(r.local), std::string("HOROVOD_LOCAL_SIZE=2"),
          "HOROVOD_CROSS_RANK=" + std::to_string(r.cross),
          "HOROVOD_CROSS_SIZE=" + std::to_string(r.cross_size), "HOROVOD_HOSTNAME=" + r.host})
      env.push_back(kv);
    std::vector<char*> envp;
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    char* argv[] = {const_cast<char*>(py), const_cast<char*>(client.c_str()), nullptr};
    pid_t pid = ::fork();
    if (pid == 0) {
      ::execve(py, argv, envp.data());
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  ids.set_candidates(pids);

  std::map<int, std::unique_ptr<Conn>> conns;
  int refused = 0, served = 0;
  std::map<pid_t, int> status;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (status.size() < pids.size() && std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> pfds{{lfd, POLLIN, 0}};
    for (auto& [fd, c] : conns) pfds.push_back({fd, POLLIN, 0});
    ::poll(pfds.data(), pfds.size(), 50);
    for (;;) {
      sockaddr_in peer{};
      socklen_t plen = sizeof peer;
      int fd = ::accept4(lfd, reinterpret_cast<sockaddr*>(&peer), &plen, SOCK_CLOEXEC);
      if (fd < 0) break;
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      TcpConnection tc;
      tc.client_addr = ntohl(peer.sin_addr.s_addr);
      tc.client_port = ntohs(peer.sin_port);
      tc.server_port = port;
      c->authenticated = auth.authenticate(tc).ok();
      conns[fd] = std::move(c);
    }
    for (std::size_t i = 1; i < pfds.size(); ++i) {
      if (!pfds[i].revents) continue;
      Conn& c = *conns[pfds[i].fd];
      char buf[65536];
      ssize_t n = ::read(c.fd, buf, sizeof buf);
      bool close_it = n <= 0;
      if (n > 0) c.parser.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      while (!close_it) {
        auto req = c.parser.next();
        std::string reply;
        if (!req && c.parser.failed()) {
          reply = format_http_response(c.parser.error()->status, "", false);
          close_it = true;
        } else if (!req) {
          break;
        } else if (!c.authenticated) {
          reply = format_http_response(403, "", false);
          close_it = true;
          ++refused;
        } else {
          auto r = store.serve(req->method, req->target, std::move(req->body));
          reply = format_http_response(r.status, r.body, req->keep_alive);
          close_it = !req->keep_alive;
          ++served;
        }
        ASSERT_EQ(::write(c.fd, reply.data(), reply.size()), static_cast<ssize_t>(reply.size()));
      }
      if (close_it) {
        ::close(c.fd);
        conns.erase(pfds[i].fd);
      }
    }
    for (pid_t p : pids) {
      int st;
      if (!status.count(p) && ::waitpid(p, &st, WNOHANG) == p) status[p] = st;
    }
  }
  for (pid_t p : pids)
    if (!status.count(p)) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
      ADD_FAILURE() << "rank pid " << p << " did not finish";
    }
  for (auto& [fd, c] : conns) ::close(fd);
  ::close(lfd);
  for (auto& [p, st] : status) EXPECT_EQ(st, 0) << "rank pid " << p;
  EXPECT_EQ(refused, 8);  // two probes per rank
  EXPECT_GT(served, 4 * 3 * 2);
  // Every rank DELETEd its scopes and blobs: nothing is left.
  EXPECT_EQ(store.scope_count(), 0u);
  std::printf("[ info     ] served %d KV requests, refused %d\n", served, refused);
}

}  // namespace
}  // namespace ferry
