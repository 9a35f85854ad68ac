#include "job_watch.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>

#include "ferry/frontend/failure_report.hpp"
#include "ferry/monitor/view_board.hpp"

namespace ferry {
namespace {

std::string wall_clock_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %Z", &tm);
  return buf;
}

std::string outcome_of(const wire::Exited& e) {
  if (e.signal != 0) return signal_name(e.signal);
  return "exit " + std::to_string(e.exit_code);
}

// Writes `text` to `path` whole (a temporary file renamed), or says why not.
std::string write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".part";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return std::strerror(errno);
    f << text;
    f.close();
    if (!f) return std::strerror(errno);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return why;
  }
  return "";
}

std::string joined(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

JobWatch::JobWatch(asio::io_context& io, const JobOptions& opts, Diagnostics& diag,
                   Clock::time_point began)
    : timer_(io),
      opts_(opts),
      diag_(diag),
      began_(began),
      stragglers_(
          StragglerRules{std::chrono::seconds(opts.stragglers_s > 0 ? opts.stragglers_s : 60),
                         opts.straggler_fraction, 200}) {
  record_.begin(joined(opts.command), wall_clock_now());
  judge_later();
}

void JobWatch::judge_later() {
  timer_.expires_after(std::chrono::milliseconds(std::max(opts_.sample_ms, 100)));
  timer_.async_wait([this](std::error_code ec) {
    if (ec || finished_) return;
    judge();
    judge_later();
  });
}

// Every host's latest round together, once per sample interval: a host's rounds come that
// often, so none is older than that.
void JobWatch::judge() {
  if (opts_.board && opts_.board->watched()) {
    const int wanted = opts_.board->wanted();
    opts_.board->publish(top_rows_json(top_rows(), top_title(joined(opts_.command))),
                         wanted >= 0 ? lines_json(tail_.lines(wanted)) : "");
  }
  std::vector<RankTick> all;
  for (const auto& [h, v] : latest_) all.insert(all.end(), v.begin(), v.end());
  if (all.empty()) return;
  const double t = now();
  std::vector<int> lagging_before;
  for (const RankTick& r : all)
    if (stragglers_.lagging(r.rank)) lagging_before.push_back(r.rank);
  for (const Straggler& s : stragglers_.observe(Clock::now(), all)) {
    if (auto it = rows_.find(s.rank); it != rows_.end()) it->second.lagging = true;
    record_.lagging(s.rank, t, true);
    record_.mark(t, "straggler", s.why);
    if (opts_.stragglers_s > 0) diag_.error(s.why);
  }
  for (int rank : lagging_before) {
    if (stragglers_.lagging(rank)) continue;
    record_.lagging(rank, t, false);
    if (auto it = rows_.find(rank); it != rows_.end()) it->second.lagging = false;
  }
}

double JobWatch::now() const {
  return std::chrono::duration<double>(Clock::now() - began_).count();
}

void JobWatch::host(size_t i, const std::string& name) { record_.set_host(i, name); }

void JobWatch::rank_started(int attempt, int rank, const std::string& label, size_t host) {
  record_.rank_started(attempt, rank, label, host, now());
  if (attempt > 0 && rows_.contains(rank) && rows_[rank].state == 'E') rows_.erase(rank);
  TopRow& row = rows_[rank];
  row.rank = rank;
  row.label = label;
  row.host = record_.hosts()[host].name;
  row.state = '?';
  printed_.erase(rank);
}

std::string JobWatch::top_title(const std::string& command) const {
  size_t running = 0;
  std::set<std::string> hosts;
  for (const auto& [rank, row] : rows_) {
    running += row.state != 'E' ? 1 : 0;
    hosts.insert(row.host);
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.0f s", now());
  return "ferry top  " + std::to_string(running) + " of " + std::to_string(rows_.size()) +
         " ranks running on " + std::to_string(hosts.size()) + " hosts  " + secs + "  " + command;
}

std::vector<TopRow> JobWatch::top_rows() const {
  std::vector<TopRow> out;
  out.reserve(rows_.size());
  for (const auto& [rank, row] : rows_) {
    out.push_back(row);
    out.back().last_line = tail_.last_line(rank);
  }
  return out;
}

void JobWatch::rank_ended(const HostLink& host, const wire::Exited& e, bool failed) {
  const double t = now();
  if (auto it = host.output.find(e.rank); it != host.output.end() && it->second.bytes > 0)
    record_.rank_output(e.rank, std::chrono::duration<double>(it->second.first - began_).count());
  record_.rank_ended(e.rank, t, outcome_of(e), failed, e.wall_ms, e.cpu_ms, e.max_rss_kb);
  forget_ticks(e.rank);
  if (auto it = rows_.find(e.rank); it != rows_.end()) {
    it->second.state = 'E';
    it->second.outcome = outcome_of(e);
    it->second.cpu = 0;
    it->second.out_rate = 0;
  }
}

void JobWatch::host_lost(const HostLink& host, size_t i, const std::string& why) {
  const double t = now();
  record_.mark(t, "host lost", host.name() + ": " + why, static_cast<int>(i));
  for (const auto& slot : host.plan.ranks) {
    record_.rank_ended(slot.rank, t, "lost with its host", true, 0, 0, 0);
    if (auto it = rows_.find(slot.rank); it != rows_.end() && it->second.state != 'E') {
      it->second.state = 'E';
      it->second.outcome = "host lost";
    }
  }
  latest_.erase(i);
}

// An ended rank leaves the stragglers' rounds at once: its host's next round (if any ever
// comes: a host whose ranks all ended sends none) would drop it only then.
void JobWatch::forget_ticks(int rank) {
  for (auto& [host, ticks] : latest_)
    std::erase_if(ticks, [rank](const RankTick& t) { return t.rank == rank; });
}

void JobWatch::mark(const std::string& kind, const std::string& text, int host) {
  record_.mark(now(), kind, text, host);
}

void JobWatch::samples(const HostLink& host, size_t i, const wire::Samples& m,
                       const std::function<std::string(int)>& label) {
  const double t = now();
  if (!m.numa.empty() || !m.accelerators.empty())
    record_.host_layout(i, m.numa.empty() ? record_.hosts()[i].numa : m.numa, m.accelerators);
  std::vector<GpuUse> gpus;
  std::vector<std::pair<uint32_t, double>> gpu_points;
  for (const wire::GpuSample& g : m.gpus) {
    gpus.push_back({g.index, g.uuid, g.util_percent, g.mem_used_mib, g.mem_total_mib});
    gpu_points.emplace_back(g.index, g.util_percent);
  }
  if (!gpu_points.empty()) record_.gpu_sample(i, t, gpu_points);
  std::vector<RankPoint> points;
  std::vector<RankTick>& ticks = latest_[i];
  ticks.clear();
  for (const wire::RankSample& s : m.ranks) {
    if (!host.owns(s.rank)) continue;
    points.push_back(
        {s.rank, s.cpu_permille / 10.0, static_cast<double>(s.rss_kb) / 1024.0, s.cpus, s.devices});
    uint64_t bytes = 0;
    if (auto it = host.output.find(s.rank); it != host.output.end()) {
      bytes = it->second.bytes;
      if (bytes > 0)
        record_.rank_output(s.rank,
                            std::chrono::duration<double>(it->second.first - began_).count());
    }
    ticks.push_back({s.rank, label(s.rank) + " on " + host.name(), static_cast<char>(s.state),
                     s.cpu_permille, bytes});
    if (auto it = rows_.find(s.rank); it != rows_.end() && it->second.state != 'E') {
      TopRow& row = it->second;
      row.state = static_cast<char>(s.state);
      row.cpu = s.cpu_permille / 10.0;
      row.rss_mib = static_cast<double>(s.rss_kb) / 1024.0;
      row.threads = s.threads;
      if (!s.cpus.empty()) row.cores = s.cpus;
      if (!s.devices.empty()) row.devices = s.devices;
      row.gpu = -1;
      if (const auto held = gpus_of(row.devices, gpus); !held.empty()) {
        double sum = 0;
        for (size_t g : held) sum += gpus[g].util_percent;
        row.gpu = sum / static_cast<double>(held.size());
      }
      const auto at = Clock::now();
      auto [prev, fresh] = printed_.try_emplace(s.rank, bytes, at);
      const double dt = std::chrono::duration<double>(at - prev->second.second).count();
      row.out_rate = (!fresh && dt > 0) ? static_cast<double>(bytes - prev->second.first) / dt : 0;
      prev->second = {bytes, at};
    }
  }
  record_.sample(i, t, points);
}

void JobWatch::finish(int exit_status) {
  if (finished_) return;
  finished_ = true;
  timer_.cancel();
  record_.finish(now(), exit_status);
  if (!opts_.report_file.empty())
    if (auto why = write_file(opts_.report_file, report_html(record_)); !why.empty())
      diag_.error("--report " + opts_.report_file + ": cannot write: " + why);
  if (!opts_.trace_file.empty())
    if (auto why = write_file(opts_.trace_file, trace_json(record_)); !why.empty())
      diag_.error("--trace " + opts_.trace_file + ": cannot write: " + why);
}

}  // namespace ferry
