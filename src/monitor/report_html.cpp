// The record as one HTML page: inline CSS and SVG, no script, nothing fetched.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "ferry/monitor/job_timeline.hpp"

namespace ferry {
namespace {

constexpr double kWidth = 960;      // drawing width of the charts, px
constexpr double kLabel = 130;      // the timeline's label column, px
constexpr double kRow = 14;         // one timeline row, px
constexpr size_t kMaxRows = 600;    // timeline rows drawn (the exit table lists every rank)
constexpr size_t kRankCharts = 64;  // per-rank CPU charts drawn

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num(double v, int digits = 1) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string duration(double s) {
  if (s < 60) return num(s, s < 10 ? 2 : 1) + " s";
  const long m = static_cast<long>(s / 60);
  return std::to_string(m) + " min " + num(s - 60.0 * static_cast<double>(m), 0) + " s";
}

// "0-3,8" → {0, 1, 2, 3, 8}; anything else is skipped.
std::vector<int> cpu_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    int a = 0, b = 0;
    if (std::sscanf(part.c_str(), "%d-%d", &a, &b) == 2) {
      for (int c = a; c <= b && c - a < 4096; ++c) out.push_back(c);
    } else if (std::sscanf(part.c_str(), "%d", &a) == 1) {
      out.push_back(a);
    }
  }
  return out;
}

// A line chart of `lines` (each a series and a colour) over [0, span] seconds.
std::string chart(const std::vector<std::pair<const Series*, std::string>>& lines, double span,
                  const std::string& unit, double width, double height) {
  double top = 1;
  for (const auto& [s, colour] : lines)
    for (const SeriesPoint& p : s->points()) top = std::max(top, static_cast<double>(p.v));
  top *= 1.1;
  std::ostringstream o;
  o << "<svg class=\"chart\" width=\"" << width + 50 << "\" height=\"" << height + 20
    << "\" role=\"img\"><g transform=\"translate(45,5)\">";
  o << "<rect width=\"" << width << "\" height=\"" << height << "\" class=\"plot\"/>";
  for (int i = 0; i <= 2; ++i) {
    const double y = height - height * i / 2.0;
    o << "<text x=\"-4\" y=\"" << y + 4 << "\" class=\"axis\" text-anchor=\"end\">"
      << num(top * i / 2.0, top < 10 ? 1 : 0) << "</text>";
  }
  o << "<text x=\"" << width << "\" y=\"" << height + 14 << "\" class=\"axis\" text-anchor=\"end\">"
    << esc(duration(span)) << "</text>";
  o << "<text x=\"4\" y=\"12\" class=\"axis\">" << esc(unit) << "</text>";
  for (const auto& [s, colour] : lines) {
    if (s->points().empty()) continue;
    o << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\" points=\"";
    for (const SeriesPoint& p : s->points())
      o << num(width * p.t / span) << "," << num(height - height * p.v / top) << " ";
    o << "\"/>";
  }
  o << "</g></svg>";
  return o.str();
}

std::string timeline(const JobTimeline& rec, double span) {
  const auto& ranks = rec.ranks();
  const size_t rows = std::min(ranks.size(), kMaxRows);
  const double height = kRow * static_cast<double>(rows) + 24;
  const double plot = kWidth - kLabel;
  std::ostringstream o;
  o << "<svg id=\"timeline\" width=\"" << kWidth + 10 << "\" height=\"" << height
    << "\" role=\"img\">";
  // Rows in host order, then rank order, attempts together.
  std::vector<size_t> order(ranks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (ranks[a].host != ranks[b].host) return ranks[a].host < ranks[b].host;
    return ranks[a].rank < ranks[b].rank;
  });
  auto x = [&](double t) { return kLabel + plot * std::clamp(t / span, 0.0, 1.0); };
  for (size_t row = 0; row < rows; ++row) {
    const RankTrack& r = ranks[order[row]];
    const double y = kRow * static_cast<double>(row);
    const double end = r.end >= 0 ? r.end : rec.end();
    o << "<text x=\"" << kLabel - 6 << "\" y=\"" << y + 11
      << "\" class=\"label\" text-anchor=\"end\">" << esc(rec.hosts()[r.host].name) << " "
      << esc(r.label) << "</text>";
    const char* cls = r.failed ? "bar failed" : (r.outcome == "exit 0" ? "bar ok" : "bar other");
    o << "<rect class=\"" << cls << "\" x=\"" << num(x(r.start)) << "\" y=\"" << y + 2
      << "\" width=\"" << num(std::max(1.0, x(end) - x(r.start))) << "\" height=\"" << kRow - 4
      << "\"><title>rank " << esc(r.label) << " on " << esc(rec.hosts()[r.host].name)
      << ", attempt " << r.attempt << ": " << esc(duration(r.start)) << " to " << esc(duration(end))
      << ", " << esc(r.outcome) << "</title></rect>";
    for (const auto& [from, to] : r.lagging)
      o << "<rect class=\"lag\" x=\"" << num(x(from)) << "\" y=\"" << y + 2 << "\" width=\""
        << num(std::max(2.0, x(to >= 0 ? to : end) - x(from))) << "\" height=\"" << kRow - 4
        << "\"><title>straggler</title></rect>";
    if (r.first_output >= 0)
      o << "<rect class=\"first\" x=\"" << num(x(r.first_output) - 1) << "\" y=\"" << y + 1
        << "\" width=\"2\" height=\"" << kRow - 2 << "\"><title>first output at "
        << esc(duration(r.first_output)) << "</title></rect>";
  }
  const double bottom = kRow * static_cast<double>(rows);
  for (const JobMark& m : rec.marks()) {
    if (m.kind == "straggler") continue;  // drawn on its rank's row
    o << "<line class=\"mark\" x1=\"" << num(x(m.t)) << "\" x2=\"" << num(x(m.t))
      << "\" y1=\"0\" y2=\"" << bottom << "\"><title>" << esc(m.kind) << ": " << esc(m.text)
      << "</title></line><text class=\"axis\" x=\"" << num(x(m.t) + 2) << "\" y=\"" << bottom + 20
      << "\">" << esc(m.kind) << "</text>";
  }
  o << "<text class=\"axis\" x=\"" << kLabel << "\" y=\"" << bottom + 10 << "\">0 s</text>"
    << "<text class=\"axis\" x=\"" << kWidth << "\" y=\"" << bottom + 10
    << "\" text-anchor=\"end\">" << esc(duration(span)) << "</text></svg>";
  if (ranks.size() > rows)
    o << "<p>The first " << rows << " of " << ranks.size()
      << " rank lives are drawn; the exit table lists every one.</p>";
  return o.str();
}

std::string binding_map(const JobTimeline& rec) {
  std::ostringstream o;
  for (size_t h = 0; h < rec.hosts().size(); ++h) {
    const HostTrack& host = rec.hosts()[h];
    // Who holds each CPU: the last attempt's ranks of this host.
    int last_attempt = 0;
    for (const RankTrack& r : rec.ranks())
      if (r.host == h) last_attempt = std::max(last_attempt, r.attempt);
    std::map<int, std::vector<std::string>> holders;
    for (const RankTrack& r : rec.ranks()) {
      if (r.host != h || r.attempt != last_attempt) continue;
      for (int c : cpu_list(r.cpus)) holders[c].push_back(r.label);
    }
    o << "<h3>" << esc(host.name) << "</h3>";
    std::vector<std::string> nodes = host.numa;
    if (nodes.empty()) nodes.emplace_back();  // layout unknown: one row of the CPUs in use
    o << "<table class=\"cores\">";
    for (size_t n = 0; n < nodes.size(); ++n) {
      std::vector<int> cpus = cpu_list(nodes[n]);
      if (nodes[n].empty())
        for (const auto& [c, who] : holders) cpus.push_back(c);
      o << "<tr><th>" << (host.numa.empty() ? "CPUs" : "NUMA " + std::to_string(n)) << "</th>";
      for (int c : cpus) {
        auto it = holders.find(c);
        const bool shared = it != holders.end() && it->second.size() > 1;
        o << "<td class=\"" << (it == holders.end() ? "free" : (shared ? "shared" : "held"))
          << "\"><span class=\"cpu\">" << c << "</span>";
        if (it != holders.end()) {
          std::string who;
          for (const auto& w : it->second) who += (who.empty() ? "" : ",") + w;
          o << "<br>" << esc(who);
        }
        o << "</td>";
      }
      o << "</tr>";
    }
    o << "</table>";
    std::ostringstream devices;
    for (const RankTrack& r : rec.ranks())
      if (r.host == h && r.attempt == last_attempt && !r.devices.empty())
        devices << "<li>rank " << esc(r.label) << ": " << esc(r.devices) << "</li>";
    if (!devices.str().empty()) o << "<ul class=\"devices\">" << devices.str() << "</ul>";
    o << "<p class=\"note\">Accelerator use: "
      << esc(host.accelerators.empty()
                 ? "not read (NVIDIA GPUs are read with nvidia-smi; none found on this host)"
                 : host.accelerators)
      << "</p>";
  }
  return o.str();
}

std::string exit_table(const JobTimeline& rec) {
  std::ostringstream o;
  o << "<table class=\"exits\"><tr><th>rank</th><th>host</th><th>attempt</th><th>outcome</th>"
       "<th>start</th><th>wall</th><th>CPU</th><th>max RSS</th><th>cores</th></tr>";
  for (const RankTrack& r : rec.ranks()) {
    o << "<tr class=\"" << (r.failed ? "failed" : "") << "\"><td>" << esc(r.label) << "</td><td>"
      << esc(rec.hosts()[r.host].name) << "</td><td>" << r.attempt << "</td><td>" << esc(r.outcome)
      << "</td><td>" << esc(duration(r.start)) << "</td><td>"
      << (r.wall_ms ? esc(duration(r.wall_ms / 1000.0)) : "") << "</td><td>"
      << (r.cpu_ms ? esc(duration(r.cpu_ms / 1000.0)) : "") << "</td><td>"
      << (r.max_rss_kb ? num(r.max_rss_kb / 1024.0) + " MiB" : "") << "</td><td>" << esc(r.cpus)
      << "</td></tr>";
  }
  o << "</table>";
  return o.str();
}

constexpr const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:14px;margin:14px 0 4px}.meta{color:#555}.note{color:#666;margin:4px 0}
.label,.axis{font-size:11px;fill:#444}.plot{fill:#fafafa;stroke:#ccc}
.bar.ok{fill:#4a9d5b}.bar.failed{fill:#d0453a}.bar.other{fill:#9a9a9a}
.lag{fill:#f0a020}.first{fill:#1f4e9c}.mark{stroke:#b03060;stroke-dasharray:4 3}
.legend span{display:inline-block;width:12px;height:10px;margin:0 4px 0 12px}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px}
.cores td{text-align:center;min-width:34px}.cores .held{background:#cfe8d4}
.cores .shared{background:#f6c6c0}.cores .free{color:#aaa}.cpu{font-size:10px;color:#777}
.exits tr.failed td{background:#fbe3e0}.charts{display:flex;flex-wrap:wrap;gap:8px}
.small{font-size:11px;color:#444})";

}  // namespace

std::string report_html(const JobTimeline& rec) {
  const double span = std::max(rec.end(), 0.001);
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    << "<title>ferry job report</title><style>" << kStyle << "</style></head><body>\n";
  size_t failed = 0;
  std::set<int> distinct;
  for (const RankTrack& r : rec.ranks()) {
    failed += r.failed ? 1 : 0;
    distinct.insert(r.rank);
  }
  o << "<h1>ferry job report</h1><p class=\"meta\"><code>" << esc(rec.command())
    << "</code><br>started " << esc(rec.started_at()) << ", ran " << esc(duration(rec.end()))
    << ", exit status " << rec.exit_status() << "; " << rec.hosts().size()
    << (rec.hosts().size() == 1 ? " host, " : " hosts, ") << distinct.size() << " ranks"
    << (failed ? ", " + std::to_string(failed) + " failed" : "") << "</p>\n";
  o << "<h2>Timeline</h2><p class=\"legend\"><span style=\"background:#4a9d5b\"></span>ended "
       "well<span style=\"background:#d0453a\"></span>failed<span style=\"background:#9a9a9a\">"
       "</span>stopped by ferry or still running<span style=\"background:#f0a020\"></span>"
       "straggler<span style=\"background:#1f4e9c;width:3px\"></span>first output</p>\n"
    << timeline(rec, span) << "\n";
  if (!rec.marks().empty()) {
    o << "<ul class=\"marks\">";
    for (const JobMark& m : rec.marks())
      o << "<li>" << esc(duration(m.t)) << " " << esc(m.kind) << ": " << esc(m.text) << "</li>";
    o << "</ul>\n";
  }
  o << "<h2>CPU and memory per host</h2>";
  for (const HostTrack& h : rec.hosts()) {
    o << "<h3>" << esc(h.name) << "</h3><div class=\"charts\">"
      << chart({{&h.cpu, "#2a6fb0"}}, span, "CPU % (100 = one core)", 400, 110)
      << chart({{&h.rss, "#8a4fb0"}}, span, "memory MiB", 400, 110);
    if (!h.gpu_util.empty()) {
      static constexpr std::array<const char*, 8> kColours = {
          "#2a6fb0", "#d0453a", "#4a9d5b", "#f0a020", "#8a4fb0", "#1f9c9c", "#9c5b1f", "#555"};
      std::vector<std::pair<const Series*, std::string>> lines;
      std::string names;
      for (const auto& [index, series] : h.gpu_util) {
        const char* colour = kColours[lines.size() % kColours.size()];
        lines.emplace_back(&series, colour);
        names += std::string(names.empty() ? "" : ", ") + "<span style=\"color:" + colour +
                 "\">GPU " + std::to_string(index) + "</span>";
      }
      o << "<div>" << chart(lines, span, "GPU use %", 400, 110) << "<div class=\"small\">" << names
        << "</div></div>";
    }
    o << "</div>";
    if (h.cpu.points().empty()) o << "<p class=\"note\">No samples came from this host.</p>";
  }
  o << "\n<h2>CPU per rank</h2><div class=\"charts\">";
  size_t drawn = 0;
  std::vector<const RankTrack*> by_rank;
  for (const RankTrack& r : rec.ranks()) by_rank.push_back(&r);
  std::stable_sort(by_rank.begin(), by_rank.end(), [](const RankTrack* a, const RankTrack* b) {
    return a->attempt != b->attempt ? a->attempt < b->attempt : a->rank < b->rank;
  });
  for (const RankTrack* rp : by_rank) {
    const RankTrack& r = *rp;
    if (drawn++ == kRankCharts) break;
    o << "<div><div class=\"small\">rank " << esc(r.label) << " on "
      << esc(rec.hosts()[r.host].name)
      << (r.attempt ? ", attempt " + std::to_string(r.attempt) : "") << "</div>"
      << chart({{&r.cpu, "#2a6fb0"}}, span, "CPU %", 200, 60) << "</div>";
  }
  o << "</div>";
  if (rec.ranks().size() > kRankCharts)
    o << "<p class=\"note\">The first " << kRankCharts << " ranks are drawn.</p>";
  o << "\n<h2>Binding map</h2><p class=\"note\">Each CPU of the host by NUMA node, with the "
       "ranks allowed on it (the last attempt's); red: more than one rank.</p>"
    << binding_map(rec) << "\n<h2>Exit table</h2>" << exit_table(rec) << "\n</body></html>\n";
  return o.str();
}

}  // namespace ferry
