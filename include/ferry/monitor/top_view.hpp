#pragma once
/// \file
/// `ferryrun --top`'s screen, without the terminal: the rows (one per rank, or per host), the
/// keys that sort, filter, move and open a rank's output, and the text of each screen line
/// for a terminal of any size (80x24 and up). The terminal itself (raw keys, the alternate
/// screen, redraws) is the front end's (frontend/job_top.cpp).

#include <cstdint>
#include <string>
#include <vector>

namespace ferry {

/// One rank as the view shows it.
struct TopRow {
  int rank = 0;
  std::string label;  ///< "3", "spawn1:0"
  std::string host;
  char state = '?';     ///< from its samples; 'E' ended
  std::string outcome;  ///< once ended: "exit 0", "SIGKILL"
  double cpu = 0;       ///< percent of one core
  double rss_mib = 0;
  uint32_t threads = 0;
  double out_rate = 0;  ///< bytes per second over the last interval
  std::string cores;    ///< "0-3"
  std::string devices;  ///< "CUDA_VISIBLE_DEVICES=1"
  double gpu = -1;      ///< its GPUs' mean use in percent; -1 unknown (not read, or none)
  std::string last_line;
  bool lagging = false;
};

/// What the view shows now and how; keys change it.
struct TopState {
  enum class Sort { kRank, kHost, kState, kCpu, kGpu, kMemory, kThreads, kOutput };
  static constexpr int kSorts = 8;
  Sort sort = Sort::kRank;
  bool reverse = false;
  bool by_host = false;
  std::string filter;   ///< a number: that rank; else rows whose host holds it; "" all
  bool typing = false;  ///< "/" was pressed: keys go to `typed` until Enter or Esc
  std::string typed;
  size_t selected = 0;  ///< index among the shown rows
  bool output = false;  ///< the selected rank's recent lines instead of the table
  int output_rank = -1;
};

/// What a key asks of the view's owner.
enum class TopAction { kNone, kRedraw, kLeave };

/// Applies one key: q leave (or back from a rank's output), s next sort column (rank, host,
/// state, CPU, GPU, memory, threads, output; the numbers largest first), r reverse,
/// h ranks/hosts, / filter (Enter applies, Esc drops; an empty filter shows all), j/k or the
/// arrow keys move, o or Enter opens the selected rank's output (o, Enter, q or Esc closes
/// it). `key` is one byte, or kUp/kDown for the arrows. `rows` are the shown rows.
TopAction top_key(TopState& s, int key, const std::vector<TopRow>& rows);
inline constexpr int kUp = 0x101;
inline constexpr int kDown = 0x102;

/// The rows to show, in order: filtered, sorted, or summed per host with by_host.
std::vector<TopRow> top_rows(const TopState& s, std::vector<TopRow> all);

/// The screen: exactly `height` lines, each exactly `width` columns (control characters of
/// the ranks' lines shown as '?'). `title` opens the first line; `output` is the open rank's
/// recent lines. Selected and header rows are marked with "\x1b[7m" ... "\x1b[0m" (inverse),
/// which take no columns.
std::vector<std::string> top_screen(const TopState& s, const std::vector<TopRow>& rows,
                                    const std::string& title,
                                    const std::vector<std::string>& output, int width, int height);

/// `text` cut or padded to exactly `width` columns (UTF-8 counted per code point; control
/// characters as '?').
std::string fit_columns(const std::string& text, size_t width);

}  // namespace ferry
