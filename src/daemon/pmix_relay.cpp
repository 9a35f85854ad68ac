#include "pmix_relay.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <array>
#include <utility>

namespace ferry {
namespace {

// Acknowledge what was read now, not after the kernel's delayed-ACK timer (40 ms). libpmix's
// client sets no TCP_NODELAY: its small messages sent back to back (MPI_Finalize sends five)
// wait under Nagle's rule for the ACK of the first. The kernel leaves quick-ACK mode on its
// own, so it is asked again after every read.
using QuickAck = asio::detail::socket_option::boolean<IPPROTO_TCP, TCP_QUICKACK>;

}  // namespace

// Copies bytes both ways between a rank and libpmix until either side closes; then closes
// both. Lives while a read or write is pending (its handlers hold it) and while the relays
// hold it (to close it when they go).
class PmixConnection : public std::enable_shared_from_this<PmixConnection> {
 public:
  PmixConnection(asio::ip::tcp::socket rank, asio::ip::tcp::socket library)
      : ends_{std::move(rank), std::move(library)} {}
  void start(std::function<void(PmixConnection*)> done) {
    done_ = std::move(done);
    pump(0);
    pump(1);
  }
  void close() {
    std::error_code ignored;
    for (auto& e : ends_) e.close(ignored);
  }

 private:
  void pump(int from) {
    auto self = shared_from_this();
    ends_[from].async_read_some(
        asio::buffer(buf_[from]), [self, from](std::error_code ec, size_t n) {
          if (ec) return self->finish();
          std::error_code ignored;
          self->ends_[from].set_option(QuickAck(true), ignored);
          asio::async_write(self->ends_[1 - from], asio::buffer(self->buf_[from].data(), n),
                            [self, from](std::error_code wec, size_t) {
                              if (wec) return self->finish();
                              self->pump(from);
                            });
        });
  }
  void finish() {
    close();
    if (done_) std::exchange(done_, nullptr)(this);
  }
  std::array<asio::ip::tcp::socket, 2> ends_;
  std::array<std::array<char, 16384>, 2> buf_{};
  std::function<void(PmixConnection*)> done_;
};

PmixRelays::PmixRelays(Events events) : events_(std::move(events)), acceptor_(io_) {}

Result<std::unique_ptr<PmixRelays>> PmixRelays::listen(Events events) {
  std::unique_ptr<PmixRelays> r(new PmixRelays(std::move(events)));
  std::error_code ec;
  r->acceptor_.open(asio::ip::tcp::v4(), ec);
  if (!ec) r->acceptor_.bind({asio::ip::address_v4::loopback(), 0}, ec);
  if (!ec) r->acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return make_error("PMIx: cannot listen on the loopback interface: " + ec.message());
  r->port_ = r->acceptor_.local_endpoint().port();
  r->accept_next();
  r->work_.emplace(asio::make_work_guard(r->io_));
  r->thread_ = std::thread([p = r.get()] { p->io_.run(); });
  return r;
}

PmixRelays::~PmixRelays() {
  // The thread closes the listener and every relay, finishes their handlers, and ends.
  asio::post(io_, [this] {
    std::error_code ignored;
    acceptor_.close(ignored);
    for (const auto& c : open_) c->close();
    open_.clear();
  });
  work_.reset();
  if (thread_.joinable()) thread_.join();
}

void PmixRelays::accept_next() {
  acceptor_.async_accept([this](std::error_code ec, asio::ip::tcp::socket rank) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec && ec != asio::error::connection_aborted)  // out of descriptors, say
      return events_.failed("cannot accept a rank's connection: " + ec.message());
    if (!ec) events_.connected(std::make_shared<asio::ip::tcp::socket>(std::move(rank)));
    accept_next();
  });
}

void PmixRelays::forward(const Socket& rank, uint16_t library_port) {
  asio::post(io_, [this, rank, library_port] { open(std::move(*rank), library_port); });
}

void PmixRelays::drop(const Socket& rank) {
  asio::post(io_, [rank] {
    std::error_code ignored;
    rank->close(ignored);
  });
}

// On the relay thread: connects to libpmix's listener and relays `rank` there.
void PmixRelays::open(asio::ip::tcp::socket rank, uint16_t library_port) {
  asio::ip::tcp::socket library(io_);
  std::error_code ec;
  if (library_port != 0) library.connect({asio::ip::address_v4::loopback(), library_port}, ec);
  if (library_port == 0 || ec)
    return events_.failed("cannot reach libpmix's own listener" +
                          (ec ? ": " + ec.message() : std::string()));
  // Each message is passed on as it comes: no Nagle delay on either hop.
  rank.set_option(asio::ip::tcp::no_delay(true), ec);
  library.set_option(asio::ip::tcp::no_delay(true), ec);
  auto c = std::make_shared<PmixConnection>(std::move(rank), std::move(library));
  open_.insert(c);
  c->start([this](PmixConnection* done) {
    for (auto it = open_.begin(); it != open_.end(); ++it)
      if (it->get() == done) return void(open_.erase(it));
  });
}

}  // namespace ferry
