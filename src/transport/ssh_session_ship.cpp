// The shipping half of SshSession's open (docs/design.md, "Shipping ferryd"). With `auto`,
// the channel first starts the installed ferryd itself and reads its greeting (the first
// bytes it writes): when they are ferryrun's protocol's, that ferryd is the one, at no cost
// beyond starting it. Otherwise (missing, failed, another version), or with `always`, a
// channel runs ship_command(): it names the ferryd to start (a cached copy it checked, or
// the file it asks for with "send x86_64" and receives into its cache) and then becomes that
// ferryd (exec), so the host costs one more channel and one command whether or not anything
// is sent.

#include <libssh/server.h>  // ssh_message_reply_default: refuses what sshd asks of us

#include <algorithm>
#include <cstdio>

#include "ssh_session.hpp"

namespace ferry {
namespace {

constexpr uint32_t kShipChunk = 256 * 1024;
constexpr size_t kMaxAnswer = size_t{64} * 1024;

std::string seconds_since(std::chrono::steady_clock::time_point t) {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

// Sends what the channel's window and the socket take of the file asked for; false when
// the connection failed (the open was failed too).
bool SshSession::ship_write() {
  ssh_channel ch = channel_.get();
  const std::string& bytes = *ship_bytes_;
  while (ship_off_ < bytes.size()) {
    if (writes_queued()) break;
    uint32_t window = ssh_channel_window_size(ch);
    if (window == 0) break;  // a WINDOW_ADJUST will arrive as readable data
    uint32_t chunk =
        static_cast<uint32_t>(std::min<size_t>({bytes.size() - ship_off_, window, kShipChunk}));
    int n = ssh_channel_write(ch, bytes.data() + ship_off_, chunk);
    sync_fd();
    if (n == SSH_ERROR) {
      fail_open("cannot send ferryd: " + error_text());
      return false;
    }
    ship_off_ += static_cast<size_t>(n);
    ship_sent_ += static_cast<uint64_t>(n);
    if (static_cast<uint32_t>(n) < chunk) break;
  }
  return true;
}

bool SshSession::read_while_opening() {
  ssh_channel ch = channel_.get();
  // on_channel_data takes what arrives into rx_out_/rx_err_; each poll is one
  // non-blocking round of packet handling (window adjusts included).
  for (;;) {
    const uint64_t before = socket_counter_.in_bytes;
    int rc = ssh_channel_poll(ch, 0);
    writes_queued();
    sync_fd();
    if (rc == SSH_ERROR && !ssh_channel_is_eof(ch) && !ssh_channel_is_closed(ch)) {
      fail_open("connection lost while " + std::string(phase_text_) + ": " + error_text());
      return false;
    }
    if (rc == SSH_ERROR || socket_counter_.in_bytes == before) return true;
  }
}

// The installed ferryd was started as the channel's command (`auto` with a greeting): its
// first bytes say whether it speaks our protocol. They stay in rx_out_ for the stream.
SshSession::Step SshSession::try_installed_step() {
  phase_text_ = "starting ferryd";
  if (!read_while_opening()) return Step::kStop;
  const ShipPlan& plan = *options_.ship;
  if (rx_out_.size() >= plan.greeting_offset + plan.greeting.size()) {
    if (rx_out_.compare(plan.greeting_offset, plan.greeting.size(), plan.greeting) != 0)
      return after_installed("greets with another protocol version");
    log(describe() + ": installed ferryd at " + ferryd_path_ + " speaks our protocol (" +
        seconds_since(ship_began_) + ")");
    log(describe() + ": started " + command_);
    phase_ = Phase::kReady;
    timer_.cancel();
    finish_open({});
    return Step::kStop;
  }
  // No greeting can come after the end of the output; the exit status (for the log) comes
  // before the close. ssh_channel_poll() handles no packets after the EOF, so from there on
  // they are handled here.
  ssh_channel ch = channel_.get();
  if (ssh_channel_is_eof(ch) || ssh_channel_is_closed(ch) || remote_closed_) {
    while (ssh_message msg = ssh_message_get(session_.get())) {
      ssh_message_reply_default(msg);
      ssh_message_free(msg);
    }
    sync_fd();
    if (!ssh_is_connected(session_.get())) {
      fail_open("connection lost while starting ferryd");
      return Step::kStop;
    }
    if (exit_status_ < 0 && exit_signal_.empty() && !remote_closed_ && !ssh_channel_is_closed(ch))
      return Step::kAgain;
    std::string err = rx_err_.substr(0, rx_err_.find('\n'));
    return after_installed("ended before its greeting (" +
                           (exit_status_ >= 0      ? "exit status " + std::to_string(exit_status_)
                            : exit_signal_.empty() ? "no exit status"
                                                   : exit_signal_) +
                           (err.empty() ? "" : ": " + err) + ")");
  }
  return Step::kAgain;
}

SshSession::Step SshSession::after_installed(const std::string& why) {
  log(describe() + ": the ferryd at " + ferryd_path_ + " " + why + "; looking for another");
  // Nothing of the old channel may reach this session's state: its callbacks go first, then
  // the channel (closed, so what was started there sees its input end).
  ssh_remove_channel_callbacks(channel_.get(), &channel_cb_);
  channel_.reset();
  writes_queued();
  sync_fd();
  rx_out_.clear();
  rx_err_.clear();
  rx_total_ = 0;
  exit_status_ = -1;
  exit_signal_.clear();
  remote_closed_ = false;
  tried_installed_ = true;
  phase_ = Phase::kChannel;
  return Step::kNext;
}

SshSession::Step SshSession::ship_talk_step() {
  phase_text_ = ship_file_ ? "sending ferryd" : "looking for ferryd";
  ssh_channel ch = channel_.get();
  if (ship_bytes_ && !ship_write()) return Step::kStop;
  if (!read_while_opening()) return Step::kStop;
  ship_err_ += rx_err_;
  rx_err_.clear();
  // The answer's lines come first; whatever follows the line that names the ferryd to
  // start is that ferryd's output and stays in rx_out_ for the stream.
  for (size_t nl = rx_out_.find('\n'); nl != std::string::npos; nl = rx_out_.find('\n')) {
    auto line = parse_ship_line(std::string_view(rx_out_).substr(0, nl));
    rx_out_.erase(0, nl + 1);
    if (!line) {
      fail_open(line.error().message);
      return Step::kStop;
    }
    if (Step s = ship_answer(*line); s != Step::kAgain) return s;
  }
  if (rx_out_.size() > kMaxAnswer) {
    fail_open("unexpected answer while looking for ferryd (too long)");
    return Step::kStop;
  }
  if (ssh_channel_is_eof(ch) || ssh_channel_is_closed(ch)) {
    std::string err = ship_err_.substr(0, ship_err_.find('\n'));
    fail_open("looking for ferryd failed" + (err.empty() ? "" : ": " + err));
    return Step::kStop;
  }
  if (ship_bytes_ && ship_off_ < ship_bytes_->size() && !writes_queued() &&
      ssh_channel_window_size(ch) > 0)
    return Step::kNext;  // the reads opened the window again: this step once more
  return Step::kAgain;
}

// One line of the host's answer: kAgain to go on talking, kStop once the ferryd to start is
// known and started (the open is done) or when the open failed.
SshSession::Step SshSession::ship_answer(const ShipLine& line) {
  switch (line.kind) {
    case ShipLine::Kind::kSend: {
      const size_t space = line.text.find(' ');
      const std::string arch = line.text.substr(0, space);
      ship_file_ = options_.ship->find(arch);
      if (!ship_file_) {
        fail_open(wrong_arch_message(*options_.ship, arch));
        return Step::kStop;
      }
      const bool gz = space != std::string::npos && line.text.substr(space + 1) == "gz";
      ship_gz_ = gz && ship_file_->gzip_size > 0;
      auto bytes = ship_file_->contents(ship_gz_);
      if (!bytes) {
        fail_open("cannot ship ferryd: " + bytes.error().message);
        return Step::kStop;
      }
      ship_bytes_ = *bytes;
      ship_off_ = 0;  // again after a failed try: the host reads the whole file anew
      if (!ship_write()) return Step::kStop;
      return Step::kAgain;
    }
    case ShipLine::Kind::kWrongArch:
      fail_open(wrong_arch_message(*options_.ship, line.text));
      return Step::kStop;
    case ShipLine::Kind::kFail:
      fail_open("cannot ship ferryd: " + line.text);
      return Step::kStop;
    case ShipLine::Kind::kUse:
    case ShipLine::Kind::kCached:
      break;
  }
  if (ship_sent_ > 0)
    log(describe() + ": shipped ferryd (" + mib(ship_file_->size) + ", " + ship_file_->arch + ", " +
        std::to_string(ship_sent_) + " bytes sent" + (ship_gz_ ? " gzipped" : "") + ") to " +
        line.text + " in " + seconds_since(ship_began_));
  else if (line.kind == ShipLine::Kind::kCached)
    log(describe() + ": ferryd cached at " + line.text + ", checked, 0 bytes sent (" +
        seconds_since(ship_began_) + ")");
  else
    log(describe() + ": installed ferryd at " + line.text + " speaks our protocol (" +
        seconds_since(ship_began_) + ")");
  // The program has exec'd it on this channel: the open is done.
  ferryd_path_ = line.text;
  command_ = shell_quote(ferryd_path_) + " --stdio";
  log(describe() + ": started " + command_);
  phase_ = Phase::kReady;
  timer_.cancel();
  finish_open({});
  return Step::kStop;
}

}  // namespace ferry
