// ConsoleOutput's --fold: a line that several ranks print alike is printed once, tagged
// with their ranks (see "Folding" in console_output.hpp).
#include <algorithm>
#include <cstring>

#include "console_parts.hpp"
#include "ferry/common/text.hpp"
#include "ferry/output/console_output.hpp"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;

// The queue of `rank`'s `stream`: a rank's stdout and stderr lines keep their own orders.
std::size_t queue_of(int rank, StreamId stream) {
  return 2 * static_cast<std::size_t>(rank) + (stream == StreamId::kStderr ? 1 : 0);
}

// The tag of a line several ranks printed, in `style`.
std::string fold_tag(TagStyle style, const std::vector<int>& ranks, StreamId stream) {
  const std::string set = number_ranges(ranks);
  const std::string name = std::string("<") + stream_name(stream) + ">:";
  switch (style) {
    case TagStyle::kNone:
      return "";
    case TagStyle::kOpenMpi:
      return "[1," + set + "]" + name;
    case TagStyle::kMpich:
      return "[" + set + "] ";
    case TagStyle::kHorovod:
    case TagStyle::kHost:
      break;
  }
  return "[" + set + "]" + name;
}

}  // namespace

void ConsoleOutput::fold_lines(StreamState& s, std::string_view held, std::string_view body) {
  const char* p = body.data();
  const char* const end = p + body.size();
  std::string first;
  while (p < end) {
    const auto* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
    std::string_view line(p, nl + 1 - p);
    if (p == body.data() && !held.empty()) {
      first.assign(held).append(line);
      line = first;
    }
    fold_line(s, line);
    p = nl + 1;
  }
  fold_out(false);
}

// Whether the next line of `queue` may join `e`: false when one of its waiting lines must
// leave after `e` (through the queues of e's ranks), which would make an order no output
// can keep, or when finding out takes too long.
bool ConsoleOutput::fold_may_join(const FoldEntry& e, std::size_t queue) const {
  using Entry = FoldEntry;
  const Folder& f = *fold_;
  const auto& mine = f.queues[queue];
  if (mine.empty()) return true;
  std::vector<const Entry*> todo{&e};
  std::vector<const Entry*> seen{&e};
  for (std::size_t steps = 0; !todo.empty(); ++steps) {
    if (steps > 256) return false;
    const Entry* x = todo.back();
    todo.pop_back();
    if (std::find(mine.begin(), mine.end(), x) != mine.end()) return false;
    for (int r : x->ranks) {
      const auto& q = f.queues[queue_of(r, x->first->stream)];
      auto it = std::find(q.begin(), q.end(), x);
      for (++it; it < q.end(); ++it) {
        if (std::find(seen.begin(), seen.end(), *it) != seen.end()) continue;
        seen.push_back(*it);
        todo.push_back(*it);
      }
    }
  }
  return true;
}

// One whole line of `s`: joins a waiting line alike (of other ranks), or waits as a new one.
void ConsoleOutput::fold_line(StreamState& s, std::string_view line) {
  Folder& f = *fold_;
  std::string key(1, static_cast<char>(s.stream));
  key.append(line);
  const std::size_t r = queue_of(s.rank, s.stream);
  if (r >= f.queues.size()) f.queues.resize(r + 1);
  if (auto it = f.index.find(key); it != f.index.end()) {
    for (FoldEntry* e : it->second) {
      if (std::find(e->ranks.begin(), e->ranks.end(), s.rank) != e->ranks.end()) continue;
      if (!fold_may_join(*e, r)) continue;
      e->ranks.push_back(s.rank);
      f.queues[r].push_back(e);
      return;
    }
  }
  f.bytes += key.size();
  FoldEntry& e = f.entries.emplace_back();
  e.key = std::move(key);
  e.ranks = {s.rank};
  e.first = &s;
  e.since = now();
  e.self = std::prev(f.entries.end());
  f.index[e.key].push_back(&e);
  f.queues[r].push_back(&e);
  arm_timer(e.since + options_.fold_delay);
}

// Prints the oldest waiting lines that are due: every rank on the console printed them,
// their time is up, or too many bytes wait (`all`: every line). Returns when the next is due.
Clock::time_point ConsoleOutput::fold_out(bool all) {
  Folder& f = *fold_;
  const Clock::time_point t = f.entries.empty() ? Clock::time_point() : now();
  while (!f.entries.empty()) {
    FoldEntry& e = f.entries.front();
    const Clock::time_point due = e.since + options_.fold_delay;
    if (!all && e.ranks.size() < f.shown && due > t && f.bytes <= options_.fold_cap) return due;
    fold_print(e);
  }
  return Clock::time_point::max();
}

// Prints `entry` after the earlier waiting lines of its ranks, and forgets it.
void ConsoleOutput::fold_print(FoldEntry& e) {
  Folder& f = *fold_;
  const StreamId stream = e.first->stream;
  for (int r : e.ranks) {
    auto& q = f.queues[queue_of(r, stream)];
    while (!q.empty() && q.front() != &e) fold_print(*q.front());
  }
  const std::string_view line = std::string_view(e.key).substr(1);
  refresh_timestamp();
  if (e.ranks.size() == 1) {
    print_tagged(*e.first->dest, e.first->tag, line);
  } else {
    std::vector<int> labels;  // the ranks' numbers in their tags (relabel())
    labels.reserve(e.ranks.size());
    for (int r : e.ranks) labels.push_back(shown(r));
    std::sort(labels.begin(), labels.end());
    print_tagged(*e.first->dest, fold_tag(options_.tag, labels, e.first->stream), line);
  }
  for (int r : e.ranks) f.queues[queue_of(r, stream)].pop_front();
  if (auto it = f.index.find(e.key); it != f.index.end()) {
    std::erase(it->second, &e);
    if (it->second.empty()) f.index.erase(it);
  }
  f.bytes -= e.key.size();
  f.entries.erase(e.self);
}

// One whole line with its stamp and `tag`, behind a holder's line if one holds `d`.
void ConsoleOutput::print_tagged(Destination& d, std::string_view tag, std::string_view line) {
  std::string& q = d.queue;
  if (d.holder != nullptr) {
    q.append(stamp_).append(tag).append(line);
    return;
  }
  unshow(d);
  d.out.keep_together(stamp_.size() + tag.size() + line.size());
  d.out.append(stamp_);
  d.out.append(tag);
  d.out.append(line);
}

}  // namespace ferry
