#include "ssh_link.hpp"

#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "ssh_io_thread.hpp"
#include "ssh_session.hpp"

namespace ferry {
namespace {

// Buffers the loop hands back for the session's next batches: enough for the batches in
// flight, so that steady streaming allocates nothing.
constexpr size_t kSpares = 6;

}  // namespace

/// What both threads of one link share. The loop's part and the thread's part are each
/// touched by one thread only; `in_flight` and the spares are the crossing points.
struct SshLink::Shared : std::enable_shared_from_this<Shared> {
  Shared(asio::io_context& l, std::weak_ptr<SshIoThread> t, std::weak_ptr<SshSession> s,
         bool on_loop)
      : loop(l), thread(std::move(t)), session(std::move(s)), direct(on_loop) {}

  // On the session's thread: a batch of ferryd's output, taken (its buffer swapped for a
  // spare) and posted to the loop. Past kInFlight bytes in flight the session stops
  // reading until the loop has caught up. A session on the loop hands it on at once,
  // while it is in the cache.
  void take(std::string& bytes, SshSession& s) {
    if (direct) return hand_on(bytes);
    std::string batch;
    {
      std::lock_guard lock(spare_mu);
      if (!spares.empty()) {
        batch = std::move(spares.back());
        spares.pop_back();
      }
    }
    batch.swap(bytes);
    const size_t n = batch.size();
    if (in_flight.fetch_add(n, std::memory_order_acq_rel) + n >= kInFlight && !full) {
      full = true;
      s.pause_reading(true);
    }
    asio::post(loop, [self = shared_from_this(), batch = std::move(batch)]() mutable {
      self->deliver(batch);
    });
  }

  // On the loop: hands the batch on, gives its buffer back, and wakes the session when
  // the bytes in flight fall below half the limit.
  void deliver(std::string& batch) {
    hand_on(batch);
    const size_t n = batch.size();
    batch.clear();
    {
      std::lock_guard lock(spare_mu);
      if (spares.size() < kSpares) spares.push_back(std::move(batch));
    }
    const size_t before = in_flight.fetch_sub(n, std::memory_order_acq_rel);
    if (before >= kInFlight / 2 && before - n < kInFlight / 2)
      if (auto t = thread.lock())
        asio::post(t->io(), [self = shared_from_this()] { self->refill(); });
  }

  // On the loop: the front end's handler gets the bytes, unless the link ended.
  void hand_on(std::string_view bytes) {
    if (ended || !on_data) return;
    DataHandler f = on_data;  // the handler may close the link
    f(bytes);
  }

  // On the session's thread: reading goes on unless the front end paused it.
  void refill() {
    if (!full || in_flight.load(std::memory_order_acquire) >= kInFlight) return;
    full = false;
    if (auto s = session.lock()) s->pause_reading(paused);
  }

  // On the loop: the stream ended (reason "" = cleanly).
  void end(const std::string& reason) {
    if (ended) return;
    ended = true;
    ClosedHandler f = std::move(on_closed);
    on_data = nullptr;
    on_closed = nullptr;
    busy.reset();
    if (f) f(reason);
  }

  asio::io_context& loop;
  const std::weak_ptr<SshIoThread> thread;
  const std::weak_ptr<SshSession> session;
  const bool direct;  // the session runs on the loop: calls go straight to it

  // The loop's part.
  DataHandler on_data;
  ClosedHandler on_closed;
  bool ended = false;  // closed by the front end, or the stream ended
  // Keeps the loop running while the stream is open: nothing else of it waits there.
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> busy;

  // The session thread's part.
  bool paused = false;  // the front end's pause_reading()
  bool full = false;    // kInFlight bytes on their way

  std::atomic<size_t> in_flight{0};
  std::mutex spare_mu;
  std::vector<std::string> spares;
};

SshLink::SshLink(asio::io_context& loop, std::shared_ptr<SshIoThread> thread,
                 std::shared_ptr<SshSession> session)
    : thread_(std::move(thread)),
      session_(std::move(session)),
      shared_(std::make_shared<Shared>(loop, thread_, session_, thread_->on_loop())),
      peer_(session_->peer_address()),
      local_(session_->local_address()),
      describe_(session_->describe()) {}

SshLink::~SshLink() { close(); }

template <class Call>
void SshLink::on_thread(Call call) {
  if (!session_) return;
  if (shared_->direct) {
    std::shared_ptr<SshSession> s = session_;  // the call may close the link
    call(*s, *shared_);
    return;
  }
  asio::post(thread_->io(),
             [s = session_, sh = shared_, call = std::move(call)]() mutable { call(*s, *sh); });
}

void SshLink::start(DataHandler on_data, ClosedHandler on_closed) {
  if (!session_ || shared_->ended) return;
  shared_->on_data = std::move(on_data);
  shared_->on_closed = std::move(on_closed);
  shared_->busy.emplace(shared_->loop.get_executor());
  on_thread([](SshSession& s, Shared& sh) {
    auto self = sh.shared_from_this();
    // The handler lives in the session: it holds the session by pointer, the shared part
    // by reference count (which holds the session only weakly).
    s.start([self, session = &s](std::string& bytes) { self->take(bytes, *session); },
            [self](const std::string& reason) {
              if (self->direct) return self->end(reason);
              asio::post(self->loop, [self, reason] { self->end(reason); });
            });
  });
}

void SshLink::send(std::string bytes) {
  on_thread(
      [bytes = std::move(bytes)](SshSession& s, Shared&) mutable { s.send(std::move(bytes)); });
}

void SshLink::pause_reading() {
  on_thread([](SshSession& s, Shared& sh) {
    sh.paused = true;
    s.pause_reading(true);
  });
}

void SshLink::resume_reading() {
  on_thread([](SshSession& s, Shared& sh) {
    sh.paused = false;
    s.pause_reading(sh.full);
  });
}

void SshLink::close() {
  if (!session_) return;
  shared_->ended = true;
  shared_->on_data = nullptr;
  shared_->on_closed = nullptr;
  shared_->busy.reset();
  // The session flushes what was sent and ferryd's EOF where it runs, and ends there.
  on_thread([](SshSession& s, Shared&) { s.close(); });
  session_ = nullptr;
}

}  // namespace ferry
