// The shipping half of SshSession's open (docs/design.md, "Shipping ferryd"): on the host's
// session, before ferryd's channel, a channel runs ship_command(). It names the ferryd to
// start: the installed one, a cached copy whose SHA-256 it checked, or the file it asks for
// ("send x86_64") and receives into its cache. Then the open goes on with that path.

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

SshSession::Step SshSession::ship_channel_step() {
  phase_text_ = "looking for ferryd";
  if (!ship_channel_) {
    ship_began_ = std::chrono::steady_clock::now();
    ship_channel_.reset(ssh_channel_new(session_.get()));
    if (!ship_channel_) {
      fail_open("cannot create a channel: " + error_text());
      return Step::kStop;
    }
  }
  int rc = ssh_channel_open_session(ship_channel_.get());
  if (rc == SSH_AGAIN) return Step::kAgain;
  if (rc != SSH_OK) {
    fail_open("cannot open a session channel (sshd MaxSessions?): " + error_text());
    return Step::kStop;
  }
  phase_ = Phase::kShipExec;
  return Step::kNext;
}

SshSession::Step SshSession::ship_exec_step() {
  const std::string command = ship_command(*options_.ship, ferryd_path_);
  int rc = ssh_channel_request_exec(ship_channel_.get(), command.c_str());
  if (rc == SSH_AGAIN) return Step::kAgain;
  if (rc != SSH_OK) {
    fail_open("the server refused to run sh, to look for ferryd: " + error_text());
    return Step::kStop;
  }
  phase_ = Phase::kShipTalk;
  return Step::kNext;
}

// Sends what the channel's window and the socket take of the file asked for; false when
// the connection failed (the open was failed too).
bool SshSession::ship_write() {
  ssh_channel ch = ship_channel_.get();
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

SshSession::Step SshSession::ship_talk_step() {
  phase_text_ = ship_file_ ? "sending ferryd" : "looking for ferryd";
  ssh_channel ch = ship_channel_.get();
  if (ship_bytes_ && !ship_write()) return Step::kStop;
  char buf[4096];
  for (int is_stderr : {0, 1}) {
    int n = 0;
    while ((n = ssh_channel_read_nonblocking(ch, buf, sizeof buf, is_stderr)) > 0)
      (is_stderr ? ship_err_ : ship_out_).append(buf, static_cast<size_t>(n));
    sync_fd();
    if (n == SSH_ERROR && !ssh_channel_is_eof(ch)) {
      fail_open("connection lost while looking for ferryd: " + error_text());
      return Step::kStop;
    }
  }
  for (size_t nl = ship_out_.find('\n'); nl != std::string::npos; nl = ship_out_.find('\n')) {
    auto line = parse_ship_line(std::string_view(ship_out_).substr(0, nl));
    ship_out_.erase(0, nl + 1);
    if (!line) {
      fail_open(line.error().message);
      return Step::kStop;
    }
    if (Step s = ship_answer(*line); s != Step::kAgain) return s;
  }
  if (ship_out_.size() > kMaxAnswer) {
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

// One line of the host's answer: kAgain to go on talking, kNext once the ferryd to start is
// known, kStop when the open failed.
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
      ship_bytes_ = gz && ship_file_->gzip ? ship_file_->gzip.get() : ship_file_->bytes.get();
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
    log(describe() + ": shipped ferryd (" + mib(ship_file_->bytes->size()) + ", " +
        ship_file_->arch + ", " + std::to_string(ship_sent_) + " bytes sent" +
        (ship_bytes_ == ship_file_->gzip.get() ? " gzipped" : "") + ") to " + line.text + " in " +
        seconds_since(ship_began_));
  else if (line.kind == ShipLine::Kind::kCached)
    log(describe() + ": ferryd cached at " + line.text + ", checked, 0 bytes sent (" +
        seconds_since(ship_began_) + ")");
  else
    log(describe() + ": installed ferryd at " + line.text + " speaks our protocol (" +
        seconds_since(ship_began_) + ")");
  ferryd_path_ = line.text;
  command_ = shell_quote(ferryd_path_) + " --stdio";
  ship_channel_.reset();  // the program has answered and exits; freeing closes the channel
  phase_ = Phase::kChannel;
  return Step::kNext;
}

}  // namespace ferry
