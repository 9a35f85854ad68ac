#include "ssh_link.hpp"

#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <optional>
#include <string_view>

#include "ssh_io_thread.hpp"
#include "ssh_session.hpp"

namespace ferry {

/// What both threads of one link share. The loop's part and the thread's part are each
/// touched by one thread only; `in_flight`, the budget and the thread's spare buffers are
/// the crossing points.
struct SshLink::Shared : std::enable_shared_from_this<Shared> {
  Shared(asio::io_context& l, std::weak_ptr<SshIoThread> t, std::weak_ptr<SshSession> s,
         bool on_loop, std::shared_ptr<InFlightBudget> b)
      : loop(l),
        thread(std::move(t)),
        session(std::move(s)),
        direct(on_loop),
        budget(std::move(b)) {}

  // On the session's thread: a batch of ferryd's output, taken (its buffer swapped for a
  // spare) and posted to the loop. Past kInFlight bytes in flight the session stops
  // reading until the loop has caught up. A session on the loop hands it on at once,
  // while it is in the cache.
  void take(std::string& bytes, SshSession& s) {
    if (direct) return hand_on(bytes);
    std::string batch;
    if (auto t = thread.lock()) batch = t->take_spare();
    batch.swap(bytes);
    const size_t n = batch.size();
    const bool mine_full = in_flight.fetch_add(n, std::memory_order_acq_rel) + n >= kInFlight;
    const bool all_full = budget && budget->add(n);
    if ((mine_full || all_full) && !full) {
      full = true;
      s.pause_reading(true);
      if (!mine_full) wait_for_budget();
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
    if (auto t = thread.lock()) t->give_spare(std::move(batch));
    const size_t before = in_flight.fetch_sub(n, std::memory_order_acq_rel);
    if (before >= kInFlight / 2 && before - n < kInFlight / 2) post_refill();
    if (budget) budget->arrived(n);
  }

  // From any thread: refill() on the session's thread.
  void post_refill() {
    if (auto t = thread.lock())
      asio::post(t->io(), [self = shared_from_this()] { self->refill(); });
  }

  // On the session's thread: refill() once the budget of all links has room again.
  void wait_for_budget() {
    budget->wait([weak = weak_from_this()] {
      if (auto self = weak.lock()) self->post_refill();
    });
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
    if (budget && budget->must_wait()) return wait_for_budget();
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
  const std::shared_ptr<InFlightBudget> budget;  // all links' bytes in flight (or null)

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
};

SshLink::SshLink(asio::io_context& loop, std::shared_ptr<SshIoThread> thread,
                 std::shared_ptr<SshSession> session, std::shared_ptr<InFlightBudget> budget)
    : thread_(std::move(thread)),
      session_(std::move(session)),
      shared_(
          std::make_shared<Shared>(loop, thread_, session_, thread_->on_loop(), std::move(budget))),
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
