// The record in the Chrome trace event format: {"traceEvents": [...], "displayTimeUnit": "ms"}.
// Hosts are processes (pid = host index + 1), ranks threads (tid = rank + 1; an attempt's
// slice carries its number), times in microseconds since the job began.
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "ferry/monitor/job_timeline.hpp"

namespace ferry {
namespace {

using nlohmann::json;

double us(double seconds) { return seconds * 1e6; }

// Each host: its name, its place, its ranks' CPU and memory summed.
void host_events(const JobTimeline& record, json& events) {
  for (size_t h = 0; h < record.hosts().size(); ++h) {
    const HostTrack& host = record.hosts()[h];
    const int pid = static_cast<int>(h) + 1;
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", host.name}}}});
    events.push_back({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"sort_index", pid}}}});
    for (const SeriesPoint& p : host.cpu.points())
      events.push_back({{"ph", "C"},
                        {"name", "CPU %"},
                        {"pid", pid},
                        {"tid", 0},
                        {"ts", us(p.t)},
                        {"args", {{"all ranks", p.v}}}});
    for (const SeriesPoint& p : host.rss.points())
      events.push_back({{"ph", "C"},
                        {"name", "memory MiB"},
                        {"pid", pid},
                        {"tid", 0},
                        {"ts", us(p.t)},
                        {"args", {{"all ranks", p.v}}}});
    for (const auto& [index, series] : host.gpu_util)
      for (const SeriesPoint& p : series.points())
        events.push_back({{"ph", "C"},
                          {"name", "GPU " + std::to_string(index) + " %"},
                          {"pid", pid},
                          {"tid", 0},
                          {"ts", us(p.t)},
                          {"args", {{"use", p.v}}}});
  }
}

// Each rank's life: a thread named once, a slice per attempt, its first output, its
// straggler spans, its CPU.
void rank_events(const JobTimeline& record, json& events) {
  std::set<std::pair<int, int>> named;  // (host, rank) given a thread name
  for (const RankTrack& r : record.ranks()) {
    const int pid = static_cast<int>(r.host) + 1;
    const int tid = r.rank + 1;
    if (named.emplace(pid, tid).second)
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", pid},
                        {"tid", tid},
                        {"args", {{"name", "rank " + r.label}}}});
    json args = {{"rank", r.label}, {"attempt", r.attempt}, {"outcome", r.outcome}};
    if (!r.cpus.empty()) args["cpus"] = r.cpus;
    if (!r.devices.empty()) args["devices"] = r.devices;
    if (r.max_rss_kb) args["max RSS KiB"] = r.max_rss_kb;
    if (r.cpu_ms) args["CPU ms"] = r.cpu_ms;
    const double end = r.end >= 0 ? r.end : record.end();
    const std::string attempt = r.attempt ? " (attempt " + std::to_string(r.attempt) + ")" : "";
    events.push_back({{"ph", "X"},
                      {"name", "rank " + r.label + attempt},
                      {"cat", r.failed ? "failed" : "rank"},
                      {"pid", pid},
                      {"tid", tid},
                      {"ts", us(r.start)},
                      {"dur", us(std::max(0.0, end - r.start))},
                      {"args", args}});
    if (r.first_output >= 0)
      events.push_back({{"ph", "i"},
                        {"s", "t"},
                        {"name", "first output"},
                        {"pid", pid},
                        {"tid", tid},
                        {"ts", us(r.first_output)}});
    for (const auto& [from, to] : r.lagging)
      events.push_back({{"ph", "X"},
                        {"name", "straggler"},
                        {"cat", "straggler"},
                        {"pid", pid},
                        {"tid", tid},
                        {"ts", us(from)},
                        {"dur", us(std::max(0.0, (to >= 0 ? to : end) - from))}});
    for (const SeriesPoint& p : r.cpu.points())
      events.push_back({{"ph", "C"},
                        {"name", "CPU % rank " + r.label},
                        {"pid", pid},
                        {"tid", tid},
                        {"ts", us(p.t)},
                        {"args", {{"CPU %", p.v}}}});
  }
}

// The job's marks: a host's on its process, the others global.
void mark_events(const JobTimeline& record, json& events) {
  for (const JobMark& m : record.marks()) {
    json e = {{"ph", "i"}, {"name", m.kind}, {"ts", us(m.t)}, {"args", {{"text", m.text}}}};
    e["s"] = m.host >= 0 ? "p" : "g";
    e["pid"] = m.host >= 0 ? m.host + 1 : 0;
    e["tid"] = 0;
    events.push_back(std::move(e));
  }
}

}  // namespace

std::string trace_json(const JobTimeline& record) {
  json events = json::array();
  host_events(record, events);
  rank_events(record, events);
  mark_events(record, events);
  json doc = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ms"},
              {"otherData",
               {{"command", record.command()},
                {"started", record.started_at()},
                {"exit status", record.exit_status()}}}};
  return doc.dump() + "\n";
}

}  // namespace ferry
