// The live view's rows, keys and screen lines.
#include "ferry/monitor/top_view.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace ferry {
namespace {

constexpr const char* kInverse = "\x1b[7m";
constexpr const char* kPlain = "\x1b[0m";

const char* state_word(const TopRow& r) {
  switch (r.state) {
    case 'R':
      return "run";
    case 'S':
      return "sleep";
    case 'D':
      return "disk";
    case 'T':
      return "stopped";
    case 'Z':
      return "zombie";
    case 'E':
      return "ended";
    case '?':
      return "start";
    default:
      return "other";
  }
}

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string rate(double bytes) {
  if (bytes < 1000) return fixed(bytes, 0);
  if (bytes < 1e6) return fixed(bytes / 1e3, 1) + "K";
  return fixed(bytes / 1e6, 1) + "M";
}

std::string right(const std::string& s, size_t w) {
  return s.size() >= w ? s.substr(0, w) : std::string(w - s.size(), ' ') + s;
}

const char* sort_name(TopState::Sort s) {
  switch (s) {
    case TopState::Sort::kRank:
      return "rank";
    case TopState::Sort::kHost:
      return "host";
    case TopState::Sort::kState:
      return "state";
    case TopState::Sort::kCpu:
      return "CPU";
    case TopState::Sort::kGpu:
      return "GPU";
    case TopState::Sort::kMemory:
      return "memory";
    case TopState::Sort::kThreads:
      return "threads";
    case TopState::Sort::kOutput:
      return "output";
  }
  return "";
}

// A number names a rank; anything else a part of a host's name (or a label: "spawn1:0").
bool matches(const TopRow& r, const std::string& filter) {
  if (filter.empty() || r.label == filter) return true;
  const bool number = filter.find_first_not_of("0123456789") == std::string::npos;
  return !number && r.host.find(filter) != std::string::npos;
}

// One table line per rank, and its header, for `width` columns: the last line takes what the
// fixed columns leave; the devices show from 120 columns.
// A GPU% column where some rank's GPUs are read.
struct Columns {
  size_t host = 10, cores = 8, devices = 0;
  bool gpu = false;
  Columns(int width, bool any_gpu) : gpu(any_gpu) {
    if (width >= 120) {
      host = 16;
      cores = 12;
      devices = 24;
    }
  }
  std::string header(bool by_host) const {
    if (by_host) return fit_columns("HOST", host + 2) + " RANKS   CPU%     RSS  OUT/s  STATES";
    std::string h = "  RANK " + fit_columns("HOST", host) + " STATE     CPU%" +
                    (gpu ? "  GPU%" : "") + "     RSS  THR  OUT/s " + fit_columns("CORES", cores);
    if (devices) h += " " + fit_columns("DEVICES", devices);
    return h + " LAST LINE";
  }
  std::string rank_line(const TopRow& r) const {
    std::string state = r.state == 'E' ? r.outcome : state_word(r);
    std::string s = (r.lagging ? "!" : " ") + right(r.label, 5) + " " + fit_columns(r.host, host) +
                    " " + fit_columns(state, 8) + " " + right(fixed(r.cpu, 0), 5) + " " +
                    (gpu ? right(r.gpu >= 0 ? fixed(r.gpu, 0) : "-", 5) + " " : "") +
                    right(fixed(r.rss_mib, 0) + "M", 7) + " " +
                    right(std::to_string(r.threads), 4) + " " + right(rate(r.out_rate), 6) + " " +
                    fit_columns(r.cores, cores);
    if (devices) s += " " + fit_columns(r.devices, devices);
    return s + " " + r.last_line;
  }
};

}  // namespace

std::string fit_columns(const std::string& text, size_t width) {
  std::string out;
  size_t cols = 0;
  for (size_t i = 0; i < text.size() && cols < width;) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t n = 1;
    if (c >= 0xf0)
      n = 4;
    else if (c >= 0xe0)
      n = 3;
    else if (c >= 0xc0)
      n = 2;
    if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xc0) || i + n > text.size()) {
      out += '?';
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
    ++cols;
  }
  out.append(width - cols, ' ');
  return out;
}

std::vector<TopRow> top_rows(const TopState& s, std::vector<TopRow> all) {
  std::vector<TopRow> rows;
  for (auto& r : all)
    if (matches(r, s.filter)) rows.push_back(std::move(r));
  if (s.by_host) {
    // One row per host: its ranks summed; `threads` counts ranks, `label` their states.
    std::map<std::string, TopRow> hosts;
    std::map<std::string, std::map<std::string, int>> states;
    for (const TopRow& r : rows) {
      TopRow& h = hosts[r.host];
      h.host = r.host;
      h.label = r.host;
      h.cpu += r.cpu;
      h.rss_mib += r.rss_mib;
      h.out_rate += r.out_rate;
      h.threads += 1;
      h.lagging = h.lagging || r.lagging;
      ++states[r.host][state_word(r)];
    }
    rows.clear();
    for (auto& [name, h] : hosts) {
      for (const auto& [word, n] : states[name])
        h.last_line += (h.last_line.empty() ? "" : " ") + std::to_string(n) + " " + word;
      rows.push_back(std::move(h));
    }
  }
  auto key_less = [&](const TopRow& a, const TopRow& b) {
    switch (s.sort) {
      case TopState::Sort::kRank:
        break;
      case TopState::Sort::kHost:
        if (a.host != b.host) return a.host < b.host;
        break;
      case TopState::Sort::kState:
        if (a.state != b.state) return a.state < b.state;
        break;
      case TopState::Sort::kCpu:
        if (a.cpu != b.cpu) return a.cpu > b.cpu;  // busiest first
        break;
      case TopState::Sort::kGpu:
        if (a.gpu != b.gpu) return a.gpu > b.gpu;
        break;
      case TopState::Sort::kMemory:
        if (a.rss_mib != b.rss_mib) return a.rss_mib > b.rss_mib;
        break;
      case TopState::Sort::kThreads:
        if (a.threads != b.threads) return a.threads > b.threads;
        break;
      case TopState::Sort::kOutput:
        if (a.out_rate != b.out_rate) return a.out_rate > b.out_rate;
        break;
    }
    return s.by_host ? a.host < b.host : a.rank < b.rank;
  };
  std::stable_sort(rows.begin(), rows.end(), key_less);
  if (s.reverse) std::reverse(rows.begin(), rows.end());
  return rows;
}

TopAction top_key(TopState& s, int key, const std::vector<TopRow>& rows) {
  if (s.typing) {
    if (key == '\r' || key == '\n') {
      s.typing = false;
      s.filter = s.typed;
      s.selected = 0;
    } else if (key == 0x1b) {
      s.typing = false;
    } else if (key == 0x7f || key == 0x08) {
      if (!s.typed.empty()) s.typed.pop_back();
    } else if (key >= 0x20 && key < 0x7f && s.typed.size() < 64) {
      s.typed += static_cast<char>(key);
    }
    return TopAction::kRedraw;
  }
  if (s.output) {
    if (key == 'o' || key == 'q' || key == 0x1b || key == '\r' || key == '\n') s.output = false;
    return TopAction::kRedraw;
  }
  switch (key) {
    case 'q':
      return TopAction::kLeave;
    case 's':
      s.sort = static_cast<TopState::Sort>((static_cast<int>(s.sort) + 1) % TopState::kSorts);
      return TopAction::kRedraw;
    case 'r':
      s.reverse = !s.reverse;
      return TopAction::kRedraw;
    case 'h':
      s.by_host = !s.by_host;
      s.selected = 0;
      return TopAction::kRedraw;
    case '/':
      s.typing = true;
      s.typed = s.filter;
      return TopAction::kRedraw;
    case 'j':
    case kDown:
      if (s.selected + 1 < rows.size()) ++s.selected;
      return TopAction::kRedraw;
    case 'k':
    case kUp:
      if (s.selected > 0) --s.selected;
      return TopAction::kRedraw;
    case 'o':
    case '\r':
    case '\n':
      if (!s.by_host && s.selected < rows.size()) {
        s.output = true;
        s.output_rank = rows[s.selected].rank;
      }
      return TopAction::kRedraw;
    default:
      return TopAction::kNone;
  }
}

std::vector<std::string> top_screen(const TopState& s, const std::vector<TopRow>& rows,
                                    const std::string& title,
                                    const std::vector<std::string>& output, int width, int height) {
  const auto w = static_cast<size_t>(std::max(width, 20));
  const auto h = static_cast<size_t>(std::max(height, 4));
  std::vector<std::string> lines;
  lines.push_back(fit_columns(title, w));
  if (s.typing) {
    lines.push_back(
        fit_columns("filter (a host, or a rank number; Enter applies, Esc drops): " + s.typed, w));
  } else if (s.output) {
    lines.push_back(fit_columns(
        "output of rank " + std::to_string(s.output_rank) + ", its last lines (o, q or Esc: back)",
        w));
  } else {
    std::string help = "q leave  s sort (" + std::string(sort_name(s.sort)) +
                       (s.reverse ? ", reversed" : "") + ")  r reverse  h " +
                       (s.by_host ? "ranks" : "hosts") + "  / filter" +
                       (s.filter.empty() ? "" : " (" + s.filter + ")") + "  j/k move  o output";
    lines.push_back(fit_columns(help, w));
  }
  if (s.output) {
    const size_t room = h - lines.size();
    const size_t from = output.size() > room ? output.size() - room : 0;
    for (size_t i = from; i < output.size(); ++i) lines.push_back(fit_columns(output[i], w));
  } else {
    const bool any_gpu =
        std::any_of(rows.begin(), rows.end(), [](const TopRow& r) { return r.gpu >= 0; });
    const Columns cols(static_cast<int>(w), any_gpu && !s.by_host);
    lines.push_back(kInverse + fit_columns(cols.header(s.by_host), w) + kPlain);
    const size_t room = h - lines.size();
    // Keep the selected row in sight.
    const size_t first = s.selected >= room ? s.selected - room + 1 : 0;
    for (size_t i = first; i < rows.size() && lines.size() < h; ++i) {
      const TopRow& r = rows[i];
      std::string text;
      if (s.by_host) {
        text = (r.lagging ? "!" : " ") + fit_columns(r.host, cols.host + 1) + " " +
               right(std::to_string(r.threads), 5) + " " + right(fixed(r.cpu, 0), 6) + " " +
               right(fixed(r.rss_mib, 0) + "M", 7) + " " + right(rate(r.out_rate), 6) + "  " +
               r.last_line;
      } else {
        text = cols.rank_line(r);
      }
      text = fit_columns(text, w);
      lines.push_back(i == s.selected ? kInverse + text + kPlain : text);
    }
    if (rows.empty() && lines.size() < h)
      lines.push_back(fit_columns(
          s.filter.empty() ? "no rank has started yet" : "no rank matches the filter " + s.filter,
          w));
  }
  while (lines.size() < h) lines.emplace_back(w, ' ');
  return lines;
}

}  // namespace ferry
