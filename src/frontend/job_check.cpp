// ferryrun --check: the job's hosts are reached, the network chosen and the preflight run as for
// the job, then every ferryd describes its host (CheckReport) and one table is printed; no rank
// starts. Exit status 0 when the job could start.
#include <cstdio>

#include "ferry/frontend/check_table.hpp"
#include "job_impl.hpp"

namespace ferry {
namespace {

// python3 importing torch on a busy host takes seconds; ferryd gives it 30.
constexpr auto kCheckWait = std::chrono::seconds(45);

std::string speed_of(const std::vector<std::string>& speeds, const std::string& iface) {
  for (const std::string& s : speeds)
    if (s.starts_with(iface + " ")) return s.substr(iface.size() + 1) + " Mb/s";
  return "";
}

}  // namespace

void Job::Impl::start_check() {
  check_.emplace();
  for (size_t i = 0; i < hosts_.size(); ++i) {
    HostLink& h = *hosts_[i];
    if (!h.hello || h.closed || !h.link) continue;
    h.link->send(wire::encode(wire::CheckRequest{}));
    check_->waiting.insert(i);
  }
  if (check_->waiting.empty()) return print_check();
  check_timer_.expires_after(kCheckWait);
  check_timer_.async_wait([this](std::error_code ec) {
    if (!ec && check_) print_check();
  });
}

void Job::Impl::on_check_report(size_t i, const wire::CheckReport& r) {
  if (!check_ || !check_->waiting.contains(i)) return on_broken(i, "unasked check report");
  check_->waiting.erase(i);
  check_->reports[i] = r;
  if (check_->waiting.empty()) print_check();
}

void Job::Impl::print_check() {
  check_timer_.cancel();
  std::vector<CheckRow> rows;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    const HostLink& h = *hosts_[i];
    CheckRow row;
    row.host = h.name();
    row.reachable = h.hello;
    row.why = h.start_error;
    row.slots = h.plan.host.slots;
    if (auto it = check_->reports.find(i); it != check_->reports.end()) {
      row.reported = true;
      row.report = it->second;
    } else if (h.hello) {
      row.why =
          "no description from its ferryd within " + std::to_string(kCheckWait.count()) + " s";
    }
    if (rdv_ && in_attempt(i) && rdv_->choice().chosen) {
      row.interface = rdv_->choice().iface[static_cast<size_t>(h.attempt_index)];
      row.speed = speed_of(row.report.link_speeds, row.interface);
    }
    auto pf = preflight_outcome_.find(i);
    row.preflight = pf != preflight_outcome_.end() ? pf->second : (h.hello ? "skipped" : "-");
    rows.push_back(std::move(row));
  }
  const std::string table = format_check_table(rows);
  out_.flush();
  std::fwrite(table.data(), 1, table.size(), stdout);
  std::fflush(stdout);
  if (!check_passed(rows)) {
    diag_.error("the job could not start as it is (see the table)");
    attempt_.end.start_failed();
  }
  check_.reset();
  finish_job();
}

}  // namespace ferry
