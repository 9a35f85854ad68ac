// The warm pool's process: host connections (each a `ferryd --pool` on an SSH channel), the
// control socket, and the relay between a job's connection and its stream on a host.
#include "ferry/pool/pool_server.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <asio.hpp>
#include <deque>
#include <map>
#include <sstream>
#include <utility>

#include "ferry/common/printable.hpp"
#include "ferry/common/read_buffer.hpp"
#include "ferry/common/text.hpp"
#include "ferry/pool/mux.hpp"
#include "ferry/pool/pool_dir.hpp"
#include "ferry/sync/tree_watch.hpp"

namespace ferry {

namespace {

using asio::local::stream_protocol;

// A host's `ferryd --pool` greets at once; one that does not within this is not one.
constexpr auto kHelloWithin = std::chrono::seconds(15);
constexpr std::size_t kMaxRequest = 4096;

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

}  // namespace

struct PoolServer::Impl {
  enum class State { kDown, kStarting, kUp };

  struct Host {
    explicit Host(asio::io_context& io) : hello_timer(io) {}
    std::string key;
    HostEntry entry;
    State state = State::kDown;
    std::unique_ptr<Link> link;
    MuxReader reader;
    std::string describe, peer, local, why;
    std::vector<std::function<void(const std::string& why)>> waiting;
    unsigned generation = 0;
    int starts = 0;
    asio::steady_timer hello_timer;
  };

  // One connection to the control socket: a request, and for `open` the job's stream.
  struct Client : std::enable_shared_from_this<Client> {
    explicit Client(asio::io_context& io) : sock(io) {}
    stream_protocol::socket sock;
    asio::streambuf request{kMaxRequest};
    std::uint32_t id = 0;  // 0: no stream
    std::string key, label;
    ReadBuffer buf{std::size_t{64} * 1024};
    std::uint64_t unacked = 0;  // sent to the host, not yet written to ferryd there
    bool reading = false, ended = false;
    std::deque<std::pair<std::string, std::size_t>> out;  // bytes, data bytes to acknowledge
    bool writing = false, close_after = false;
  };

  Impl(asio::io_context& io, PoolOptions o)
      : io(io), opt(std::move(o)), launcher(io, ssh_options(opt)), acceptor(io), idle_timer(io) {}

  static SshOptions ssh_options(const PoolOptions& o) {
    SshOptions s = o.ssh;
    s.ferryd_mode = "--pool";
    s.ship = nullptr;
    return s;
  }

  void log(const std::string& line) const {
    if (opt.log) opt.log(line);
  }

  // --- hosts -------------------------------------------------------------------------------

  Host* find_host(const std::string& key) {
    auto it = hosts.find(key);
    return it == hosts.end() ? nullptr : it->second.get();
  }

  void start_host(Host& h) {
    h.state = State::kStarting;
    const unsigned gen = ++h.generation;
    ++h.starts;
    DaemonCommand cmd;
    cmd.ferryd_path = opt.ferryd_path;
    cmd.on_stderr = [this, key = h.key](const std::string& line) { log(key + ": " + line); };
    log(h.key + ": " + (h.starts > 1 ? "starting ferryd --pool again" : "starting ferryd --pool"));
    launcher.async_open(h.entry, cmd, [this, key = h.key, gen](Result<std::unique_ptr<Link>> r) {
      Host* host = find_host(key);
      if (!host || host->generation != gen || stopped) return;
      if (!r) return host_down(*host, r.error().message);
      host->link = std::move(*r);
      host->reader = MuxReader();
      host->describe = host->link->describe();
      host->peer = host->link->peer_address();
      host->local = host->link->local_address();
      host->link->start([this, key, gen](std::string_view bytes) { on_host_data(key, gen, bytes); },
                        [this, key, gen](const std::string& why) {
                          Host* hh = find_host(key);
                          if (!hh || hh->generation != gen) return;
                          host_down(*hh, why.empty() ? "its ferryd --pool ended" : why);
                        });
      host->hello_timer.expires_after(kHelloWithin);
      host->hello_timer.async_wait([this, key, gen](std::error_code ec) {
        Host* hh = find_host(key);
        if (ec || !hh || hh->generation != gen || hh->state != State::kStarting) return;
        host_down(*hh, "ferryd --pool did not greet within " +
                           std::to_string(kHelloWithin.count()) +
                           " s (is the host's ferryd older than this ferry?)");
      });
    });
  }

  void host_up(Host& h) {
    h.state = State::kUp;
    h.why.clear();
    h.hello_timer.cancel();
    log(h.key + ": up (" + h.describe + ")");
    first_result(h.key + " up " + h.describe, true);
    auto waiting = std::move(h.waiting);
    h.waiting.clear();
    for (auto& w : waiting) w("");
  }

  void host_down(Host& h, const std::string& why) {
    ++h.generation;  // callbacks of the old link are ignored from now on
    if (h.link) {
      h.link->close();
      h.link.reset();
    }
    h.hello_timer.cancel();
    const bool was_up = h.state == State::kUp;
    h.state = State::kDown;
    h.why = why;
    log(h.key + ": down: " + why);
    if (!was_up) first_result(h.key + " failed " + why, false);
    // Every job's stream on it ends; their front ends see the host lost.
    std::vector<std::shared_ptr<Client>> gone;
    for (auto& [id, c] : streams)
      if (c->key == h.key) gone.push_back(c);
    for (auto& c : gone) end_stream(*c, "the pool's connection to " + h.key + " ended: " + why);
    auto waiting = std::move(h.waiting);
    h.waiting.clear();
    for (auto& w : waiting) w(why);
  }

  // The first start of each host, for `ferry up`'s report.
  void first_result(const std::string& line, bool up) {
    if (!ready) return;
    ready_lines.emplace_back(line);
    if (up) ++ready_up;
    if (static_cast<int>(ready_lines.size()) == static_cast<int>(hosts.size())) {
      auto r = std::move(ready);
      ready = nullptr;
      r(ready_lines, ready_up);
    }
  }

  void on_host_data(const std::string& key, unsigned gen, std::string_view bytes) {
    Host* h = find_host(key);
    if (!h || h->generation != gen) return;
    h->reader.feed(bytes);
    for (;;) {
      auto f = h->reader.next();
      if (!f) return host_down(*h, f.error().message);
      if (!*f) return;
      MuxFrame& frame = **f;
      if (frame.type == MuxType::kHello) {
        auto words = split(frame.payload, ' ');
        if (words.size() < 2 || words[0] != "ferryd-pool" ||
            words[1] != std::to_string(kMuxVersion))
          return host_down(
              *h, "its ferryd speaks another pool version ('" + printable(frame.payload) + "')");
        if (h->state == State::kStarting) host_up(*h);
        continue;
      }
      auto it = streams.find(frame.stream);
      if (it == streams.end()) continue;  // a stream already closed here
      std::shared_ptr<Client> c = it->second;
      switch (frame.type) {
        case MuxType::kData: {
          const std::size_t n = frame.payload.size();
          to_client(c, encode_mux(MuxType::kData, 0, frame.payload), n);
          break;
        }
        case MuxType::kStderr:
          to_client(c, encode_mux(MuxType::kStderr, 0, frame.payload), 0);
          break;
        case MuxType::kAck:
          if (auto n = decode_mux_ack(frame.payload)) {
            c->unacked -= std::min(c->unacked, *n);
            if (!c->reading && !c->ended && c->unacked < kMuxWindow) read_client(c);
          }
          break;
        case MuxType::kClose:
          end_stream(*c, frame.payload, false);
          break;
        default:
          break;
      }
    }
  }

  // --- the control socket ------------------------------------------------------------------

  Status bind_socket() {
    const std::string path = opt.dir + "/" + kPoolSocketName;
    if (path.size() >= sizeof(sockaddr_un::sun_path))
      return make_error(path + ": too long for a Unix socket (set XDG_STATE_HOME shorter)");
    ::unlink(path.c_str());
    std::error_code ec;
    acceptor.open(stream_protocol(), ec);
    const mode_t old_mask = ::umask(0177);  // 0600 from the start
    if (!ec) acceptor.bind(stream_protocol::endpoint(path), ec);
    ::umask(old_mask);
    if (!ec) acceptor.listen(64, ec);
    if (ec) return make_error(path + ": " + ec.message());
    socket_path = path;
    return {};
  }

  void accept() {
    auto c = std::make_shared<Client>(io);
    acceptor.async_accept(c->sock, [this, c](std::error_code ec) {
      if (stopped) return;
      if (!ec) serve(c);
      accept();
    });
  }

  void serve(const std::shared_ptr<Client>& c) {
    ucred peer{};
    socklen_t len = sizeof peer;
    if (::getsockopt(c->sock.native_handle(), SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 ||
        peer.uid != ::geteuid()) {
      log("refused a connection of uid " + std::to_string(peer.uid));
      to_client(c, "refused: this pool belongs to another user\n", 0);
      c->close_after = true;
      return;
    }
    asio::async_read_until(c->sock, c->request, '\n', [this, c](std::error_code ec, size_t n) {
      if (ec || stopped) return;
      std::string line(asio::buffers_begin(c->request.data()),
                       asio::buffers_begin(c->request.data()) + static_cast<std::ptrdiff_t>(n - 1));
      c->request.consume(n);
      request(c, line);
    });
  }

  void reply(const std::shared_ptr<Client>& c, const std::string& text) {
    to_client(c, text, 0);
    c->close_after = true;
    if (!c->writing) finish_client(c);
  }

  void request(const std::shared_ptr<Client>& c, const std::string& line) {
    const auto words = split(line, ' ');
    if (words.size() >= 2 && words[0] == "open")
      return open(c, words[1], words.size() > 2 ? words[2] : "");
    if (line == "hosts") {
      std::string text;
      for (const auto& key : order) {
        const Host& h = *hosts[key];
        text += h.key + " " +
                (h.state == State::kUp         ? "up"
                 : h.state == State::kStarting ? "starting"
                                               : "down") +
                " " + or_dash(h.describe) + (h.why.empty() ? "" : " " + h.why) + "\n";
      }
      return reply(c, text + "end\n");
    }
    // ferryrun's question before it reads a --sync tree: "tree TOKEN ROOT" (tree_watch.hpp).
    if (line.starts_with("tree ") && words.size() >= 3) {
      const size_t root_at = 5 + words[1].size() + 1;
      const TreeWatch::Answer a = trees.ask(line.substr(root_at), words[1]);
      return reply(c, std::string(a.unchanged ? "unchanged " : "read ") +
                          (a.token.empty() ? "-" : a.token) + "\n");
    }
    if (line == "jobs") {
      std::string text;
      for (const auto& [id, s] : streams) text += s->key + " " + or_dash(s->label) + "\n";
      return reply(c, text + "end\n");
    }
    if (line == "down") {
      log("down asked");
      reply(c, "ok\n");
      asio::post(io, [this] { stop(); });
      return;
    }
    reply(c, "no unknown request '" + printable(line, 60) + "'\n");
  }

  void open(const std::shared_ptr<Client>& c, const std::string& key, const std::string& label) {
    Host* h = find_host(key);
    if (!h) return reply(c, "no " + key + " is not in this pool\n");
    c->label = label;
    if (h->state == State::kUp) return begin_stream(c, *h, "warm");
    const bool repair = h->state == State::kDown;
    h->waiting.emplace_back([this, c, key, repair](const std::string& why) {
      Host* hh = find_host(key);
      if (!why.empty() || !hh) return reply(c, "no " + key + ": " + why + "\n");
      begin_stream(c, *hh, repair ? "repaired" : "warm");
    });
    if (repair) start_host(*h);
  }

  void begin_stream(const std::shared_ptr<Client>& c, Host& h, const std::string& how) {
    if (stopped) return;
    c->id = next_id++;
    c->key = h.key;
    streams[c->id] = c;
    idle_timer.cancel();
    log(h.key + ": job " + or_dash(c->label) + " on stream " + std::to_string(c->id) + " (" + how +
        ")");
    h.link->send(encode_mux(MuxType::kOpen, c->id, c->label));
    to_client(c, encode_open_answer(OpenAnswer{h.peer, h.local, h.describe, how}), 0);
    // What the job wrote after its request line is ferryd's already.
    if (c->request.size() > 0) {
      std::string early(asio::buffers_begin(c->request.data()),
                        asio::buffers_end(c->request.data()));
      c->request.consume(c->request.size());
      c->unacked += early.size();
      h.link->send(encode_mux(MuxType::kData, c->id, early));
    }
    read_client(c);
  }

  void read_client(const std::shared_ptr<Client>& c) {
    c->reading = true;
    c->sock.async_read_some(
        asio::buffer(c->buf.data(), c->buf.size()), [this, c](std::error_code ec, size_t n) {
          c->reading = false;
          if (c->ended || stopped) return;
          Host* h = find_host(c->key);
          if (ec || !h || !h->link) return end_stream(*c, "", true);
          c->unacked += n;
          h->link->send(encode_mux(MuxType::kData, c->id, std::string_view(c->buf.data(), n)));
          if (c->unacked < kMuxWindow) read_client(c);
        });
  }

  void to_client(const std::shared_ptr<Client>& c, std::string bytes, std::size_t ack) {
    c->out.emplace_back(std::move(bytes), ack);
    if (!c->writing) write_client(c);
  }

  void write_client(const std::shared_ptr<Client>& c) {
    if (c->out.empty()) {
      c->writing = false;
      if (c->close_after) finish_client(c);
      return;
    }
    c->writing = true;
    asio::async_write(c->sock, asio::buffer(c->out.front().first),
                      [this, c](std::error_code ec, size_t) {
                        if (ec) {  // the job's front end is gone
                          c->out.clear();
                          c->writing = false;
                          if (c->id != 0 && !c->ended) end_stream(*c, "", true);
                          return;
                        }
                        const std::size_t ack = c->out.front().second;
                        c->out.pop_front();
                        if (ack > 0 && c->id != 0 && !c->ended)
                          if (Host* h = find_host(c->key); h && h->link)
                            h->link->send(encode_mux_ack(c->id, ack));
                        write_client(c);
                      });
  }

  static void finish_client(const std::shared_ptr<Client>& c) {
    std::error_code ignored;
    c->sock.shutdown(stream_protocol::socket::shutdown_both, ignored);
    c->sock.close(ignored);
  }

  // A job's stream ends. `tell_host`: the job's side ended it (the host's ferryd is told);
  // else the host did, and the job is told why (a kClose frame), after what it was sent.
  void end_stream(Client& c, const std::string& why, bool tell_host = false) {
    if (c.ended) return;
    c.ended = true;
    auto self = c.shared_from_this();
    if (tell_host)
      if (Host* h = find_host(c.key); h && h->link)
        h->link->send(encode_mux(MuxType::kClose, c.id, ""));
    if (!tell_host) {
      to_client(self, encode_mux(MuxType::kClose, 0, why), 0);
      c.close_after = true;
      if (!c.writing) finish_client(self);
    } else {
      finish_client(self);
    }
    log(c.key + ": stream " + std::to_string(c.id) + " ended" + (why.empty() ? "" : ": " + why));
    streams.erase(c.id);
    check_idle();
  }

  void check_idle() {
    if (stopped || !streams.empty()) return;
    idle_timer.expires_after(opt.idle);
    idle_timer.async_wait([this](std::error_code ec) {
      if (ec || stopped || !streams.empty()) return;
      log("no job for " + std::to_string(opt.idle.count()) + " s: ending");
      stop();
    });
  }

  void write_hosts_file() {
    std::string text;
    for (const auto& key : order) text += key + "\n";
    const std::string path = opt.dir + "/" + kPoolHostsName, tmp = path + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
      ::rename(tmp.c_str(), path.c_str());
    }
  }

  void stop() {
    if (stopped) return;
    stopped = true;
    log("ending: closing every host's connection");
    std::error_code ignored;
    acceptor.close(ignored);
    idle_timer.cancel();
    ::unlink(socket_path.c_str());
    ::unlink((opt.dir + "/" + kPoolHostsName).c_str());
    auto all = streams;
    for (auto& [id, c] : all) end_stream(*c, "the pool ended");
    for (auto& [key, h] : hosts) {
      ++h->generation;
      h->hello_timer.cancel();
      if (h->link) h->link->close();
      h->link.reset();
    }
    launcher.cancel_all();
    if (auto f = std::move(opt.on_stop)) f();
  }

  asio::io_context& io;
  PoolOptions opt;
  SshLauncher launcher;
  stream_protocol::acceptor acceptor;
  asio::steady_timer idle_timer;
  std::map<std::string, std::unique_ptr<Host>> hosts;
  std::vector<std::string> order;
  std::map<std::uint32_t, std::shared_ptr<Client>> streams;
  std::uint32_t next_id = 1;
  Ready ready;
  std::vector<std::string> ready_lines;
  int ready_up = 0;
  std::string socket_path;
  TreeWatch trees;  ///< the --sync trees of its jobs, watched from launch to launch
  bool stopped = false;
};

PoolServer::PoolServer(asio::io_context& io, PoolOptions options)
    : impl_(std::make_unique<Impl>(io, std::move(options))) {}

PoolServer::~PoolServer() {
  // Closing sockets and cancelling timers throws only when the reactor itself fails; a
  // destructor must not throw, and the loop goes away with the process.
  try {
    stop();
  } catch (...) {
  }
}

Status PoolServer::start(Ready ready) {
  Impl& m = *impl_;
  for (const HostEntry& e : m.opt.hosts) {
    const std::string key = pool_host_key(e, m.opt.ssh.default_port, m.opt.ssh.default_user);
    if (m.hosts.contains(key)) continue;
    auto h = std::make_unique<Impl::Host>(m.io);
    h->key = key;
    h->entry = e;
    m.order.push_back(key);
    m.hosts[key] = std::move(h);
  }
  if (Status st = m.bind_socket(); !st) return st;
  m.ready = std::move(ready);
  m.write_hosts_file();
  m.accept();
  for (const auto& key : m.order) m.start_host(*m.hosts[key]);
  m.check_idle();
  return {};
}

void PoolServer::stop() { impl_->stop(); }

}  // namespace ferry
