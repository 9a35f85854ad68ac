#pragma once
/// \file
/// Private to src/frontend/: one host of a running job as the front end sees it: its plan, its link
/// to ferryd, where it is in its life (opening, Hello, spec sent, Done, closed), and the decoding
/// of everything its ferryd sends. What the frames mean for the job is the job's to decide
/// (HostEvents).

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/frontend/host_reach.hpp"
#include "ferry/monitor/output_tail.hpp"
#include "ferry/output/sink.hpp"
#include "ferry/plan/placement.hpp"
#include "ferry/rendezvous/nic_choice.hpp"
#include "ferry/sync/tree_sender.hpp"
#include "ferry/transport/link.hpp"
#include "ferry/wire/messages.hpp"

namespace ferry {

/// The job's side of its hosts' frames, each with the host's index. A frame that names a rank of
/// another host, or cannot be decoded, arrives as on_broken instead.
class HostEvents {
 public:
  virtual void on_hello(size_t host) = 0;
  virtual void on_started(size_t host, const wire::Started& s) = 0;
  virtual void on_exited(size_t host, const wire::Exited& e) = 0;
  virtual void on_failure(size_t host, const wire::Failure& f) = 0;
  virtual void on_stdin_ack(size_t host, uint32_t bytes) = 0;
  virtual void on_kv_request(size_t host, const wire::KvRequest& q) = 0;
  virtual void on_pmi_barrier(size_t host, const wire::PmiBarrier& b) = 0;
  virtual void on_pmi_abort(size_t host, const wire::PmiAbort& a) = 0;
  virtual void on_pmix_fence(size_t host, const wire::PmixFence& f) = 0;
  virtual void on_pmix_modex_request(size_t host, const wire::PmixModexRequest& r) = 0;
  virtual void on_pmix_modex_reply(size_t host, const wire::PmixModexReply& r) = 0;
  virtual void on_pmix_dynamic(size_t host, const wire::PmixDynamic& m) = 0;
  virtual void on_pmix_spawn(size_t host, const wire::PmixSpawn& m) = 0;
  virtual void on_pmi_spawn(size_t host, const wire::PmiSpawn& m) = 0;
  virtual void on_log(size_t host, const std::string& line) = 0;
  virtual void on_done(size_t host, const wire::Done& d) = 0;
  virtual void on_state_report(size_t host, const wire::StateReport& r) = 0;
  virtual void on_preflight_result(size_t host, const wire::PreflightResult& r) = 0;
  virtual void on_check_report(size_t host, const wire::CheckReport& r) = 0;
  virtual void on_sync_need(size_t host, const wire::SyncNeed& m) = 0;
  virtual void on_sync_ack(size_t host, const wire::SyncAck& m) = 0;
  virtual void on_sync_ready(size_t host, const wire::SyncReady& m) = 0;
  virtual void on_samples(size_t host, const wire::Samples& m) = 0;
  /// ferryd broke the protocol (`why`: one line); the link is still open.
  virtual void on_broken(size_t host, const std::string& why) = 0;
  /// The link ended; `reason` is empty for a clean end of stream.
  virtual void on_closed(size_t host, const std::string& reason) = 0;

 protected:
  ~HostEvents() = default;
};

/// One host of the job. The job's policy reads and sets the state fields; once attached, the host
/// reads its link itself. Output frames go straight to the sink: they are most of the traffic, and
/// their bytes never leave the reader's buffer.
class HostLink {
 public:
  using Clock = std::chrono::steady_clock;

  HostLink(size_t index, HostPlan plan, HostReach reach, HostEvents& events, OutputSink& out);

  /// The host's name in messages (HostPlan::label).
  const std::string& name() const { return plan.label; }
  /// "host:port" once connected, else the name.
  std::string where() const { return link ? link->describe() : name(); }
  /// `rank`'s slot if it is one of this host's ranks, else null.
  const RankSlot* slot(int rank) const;
  bool owns(int rank) const { return slot(rank) != nullptr; }
  /// This host for the NIC choice: its interfaces as ferryd listed them in Hello, and the address
  /// ferryrun reached it at (`this_machine` for a local host). A list that cannot be read leaves
  /// the interfaces empty and says why in `problem`.
  HostNetwork network(const std::string& this_machine, std::string& problem) const;
  /// Takes the opened link and starts reading it.
  void attach(std::unique_ptr<Link> opened);
  /// Sends `frame` if the link is open and the host has its spec (the job is running there).
  void send_running(const std::string& frame);
  /// The host runs `p` in the next attempt, as host `index` of that attempt's placement.
  void begin_attempt(HostPlan p, int index);
  /// Closes the link (ferryd sees EOF and ends its ranks); marks the host closed.
  void close();
  /// A new HostLink took this host's index: whatever this link still reports is ignored.
  void retire() {
    close();
    retired_ = true;
  }

  HostPlan plan;
  bool local = false;        // started without SSH
  std::string reach_reason;  // why local or SSH, for --verbose
  std::unique_ptr<Link> link;
  bool opening = true;  // open in flight
  bool hello = false;
  wire::Hello hello_msg;
  std::string start_error;  // set when the host failed to start
  bool spec_sent = false;
  bool pmix_start_sent = false;      // PmixStart went out (before the first HostSpec)
  std::unique_ptr<TreeSender> sync;  // --sync: the files on their way to this ferryd
  bool synced = false;               // --sync: its copy of the tree is in place
  Clock::time_point sync_heard{};    // --sync: when it last answered (or was offered the tree)
  std::string sync_error;            // --sync: what failed before the attempt's sync began
  bool join_after_sync = false;      // --sync: joins the running attempt once its copy is in place
  bool done = false;                 // ferryd said Done (for this attempt)
  int attempt_index = -1;            // index in the running attempt's placement; -1: not in it
  bool lost = false;                 // the link ended while its ranks ran (or between attempts)
  std::string lost_why;              // why it was lost, for the follow-up
  uint16_t free_port = 0;            // a port free on the host, from Hello then each Done
  Clock::time_point last_heard = Clock::now();
  /// What each of this host's ranks printed: when last (from its Started on, for the state
  /// report), when first, and how many bytes (the job's view).
  struct RankOutput {
    Clock::time_point last{};
    Clock::time_point first{};
    uint64_t bytes = 0;
  };
  std::map<int32_t, RankOutput> output;
  /// --top: every output frame's bytes go here too (the ranks' last lines); null: none.
  OutputTail* tail = nullptr;
  bool closed = false;  // link ended (or never opened)
  int ranks_left = 0;

 private:
  void on_data(std::string_view bytes);
  void handle_hello(const wire::FrameView& f);
  void handle_frame(const wire::FrameView& f);

  size_t index_;
  bool retired_ = false;
  HostEvents& events_;
  OutputSink& out_;
  wire::FrameReader reader_;
};

/// The job's hosts, in placement order.
using HostLinks = std::vector<std::unique_ptr<HostLink>>;

/// This machine's address on the connection to a remote host: where remote ranks reach a host that
/// runs on this machine. "" when no host is remote.
std::string this_machine_address(const HostLinks& hosts);

/// Where every rank can reach the rank-0 host `first`, before any NIC choice: the address ferryrun
/// reached it at; when it is this machine, this_machine_address(), else loopback (every host is
/// this machine).
std::string rank0_address(const HostLink& first, const HostLinks& hosts);

}  // namespace ferry
