#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "console_parts.hpp"
#include "ferry/output/console_output.hpp"

namespace ferry {
namespace {

// Appends to a std::string with FdWriter's interface, for lines held back in a queue.
struct StringOut {
  std::string& s;
  void keep_together(std::size_t) {}
  void append(const char* p, std::size_t n) { s.append(p, n); }
  void append(std::string_view v) { s.append(v); }
};

// Writes `held` and `body` (whole lines) to `out`, stamp and tag before each line.
template <typename Out>
void format_lines(Out& out, std::string_view stamp, std::string_view tag, std::string_view held,
                  std::string_view body) {
  if (stamp.empty() && tag.empty()) {
    out.append(held);
    out.append(body);
    return;
  }
  const char* p = body.data();
  const char* const end = p + body.size();
  bool first = true;
  while (p < end) {
    const auto* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
    out.keep_together(stamp.size() + tag.size() + (first ? held.size() : 0) + (nl + 1 - p));
    if (!stamp.empty()) out.append(stamp);
    out.append(tag);
    if (first) {
      out.append(held);
      first = false;
    }
    out.append(p, nl + 1 - p);
    p = nl + 1;
  }
}

// The ends (one past each '\n') of the lines in [p, lim), at most `max` of them plus those
// of the last 64-byte chunk looked at; returns how many were found. Short lines are the
// case this is for: a memchr call per line costs more than the line's bytes (2-byte lines:
// 10 ns a line against 3).
std::size_t find_line_ends(const char* p, const char* const lim, const char** ends,
                           std::size_t max) {
  std::size_t n = 0;
#if defined(__SSE2__)
  const __m128i nl = _mm_set1_epi8('\n');
  const auto mask = [&](const char* at) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    return std::uint64_t{static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)))};
  };
  for (; lim - p >= 64 && n < max; p += 64) {
    std::uint64_t m = mask(p) | mask(p + 16) << 16 | mask(p + 32) << 32 | mask(p + 48) << 48;
    for (; m != 0; m &= m - 1) ends[n++] = p + __builtin_ctzll(m) + 1;
  }
#endif
  while (p < lim && n < max) {
    const auto* nl_at = static_cast<const char*>(std::memchr(p, '\n', lim - p));
    if (nl_at == nullptr) break;
    p = ends[n++] = nl_at + 1;
  }
  return n;
}

// Whole lines of `body` a block at a time, straight into the writer's buffer: the block's
// line ends are found once (up to kMaxLines), their room taken in one step and filled
// with fixed-size copies where they fit (a 16-, 32- or 64-byte memcpy compiles to a few
// moves; a sized one is a call), writing up to kScratch bytes past the data, which the
// next line overwrites and shrink() gives back. Blocks end at line ends, so each write(2)
// still does. A line longer than a block, or a block whose tagged lines would not fit a
// buffer, goes through format_lines().
void format_lines_direct(FdWriter& out, std::string_view stamp, std::string_view tag,
                         std::string_view held, std::string_view body) {
  constexpr std::size_t kBlock = std::size_t{8} * 1024;
  constexpr std::size_t kMaxLines = 1024;
  constexpr std::size_t kScratch = 64;
  const std::size_t pre = stamp.size() + tag.size();
  char prefix[kScratch] = {};
  const bool short_prefix = pre <= 32;
  if (short_prefix) {
    std::memcpy(prefix, stamp.data(), stamp.size());
    std::memcpy(prefix + stamp.size(), tag.data(), tag.size());
  }
  const char* p = body.data();
  const char* const end = p + body.size();
  const char* ends[kMaxLines + 64];
  while (p < end) {
    const std::size_t span = std::min<std::size_t>(end - p, kBlock);
    const std::size_t lines = std::min(find_line_ends(p, p + span, ends, kMaxLines), kMaxLines);
    if (lines == 0 || held.size() > kBlock) {  // a long first line
      const auto* last = static_cast<const char*>(std::memchr(p, '\n', end - p));
      format_lines(out, stamp, tag, held, std::string_view(p, last + 1 - p));
      held = {};
      p = last + 1;
      continue;
    }
    const char* const stop = ends[lines - 1];
    char* w = out.extend((stop - p) + lines * pre + held.size() + kScratch);
    if (w == nullptr) {
      format_lines(out, stamp, tag, held, std::string_view(p, stop - p));
      held = {};
      p = stop;
      continue;
    }
    for (std::size_t i = 0; i < lines; ++i, held = {}) {
      if (short_prefix) {
        std::memcpy(w, prefix, 32);
      } else {
        std::memcpy(w, stamp.data(), stamp.size());
        std::memcpy(w + stamp.size(), tag.data(), tag.size());
      }
      w += pre;
      if (!held.empty()) std::memcpy(w, held.data(), held.size());
      w += held.size();
      const std::size_t len = ends[i] - p;
      if (len <= 16 && end - p >= 16) {
        std::memcpy(w, p, 16);
      } else if (len <= 64 && end - p >= 64) {
        std::memcpy(w, p, 64);
      } else {
        std::memcpy(w, p, len);
      }
      w += len;
      p = ends[i];
    }
    out.shrink(kScratch);
  }
}

}  // namespace

std::string format_tag(TagStyle style, int rank, StreamId stream, std::string_view host) {
  char buf[64];
  switch (style) {
    case TagStyle::kNone:
      return std::string();
    case TagStyle::kHorovod:
      std::snprintf(buf, sizeof buf, "[%d]<%s>:", rank, stream_name(stream));
      break;
    case TagStyle::kOpenMpi:
      std::snprintf(buf, sizeof buf, "[1,%d]<%s>:", rank, stream_name(stream));
      break;
    case TagStyle::kMpich:
      std::snprintf(buf, sizeof buf, "[%d] ", rank);
      break;
    case TagStyle::kHost:
      if (host.empty()) return format_tag(TagStyle::kHorovod, rank, stream);
      return "[" + std::to_string(rank) + "@" + std::string(host) + "]<" + stream_name(stream) +
             ">:";
  }
  return buf;
}

std::string format_spawned_tag(TagStyle style, int spawn, int rank, StreamId stream,
                               std::string_view host) {
  const std::string name = "spawn" + std::to_string(spawn) + ":" + std::to_string(rank);
  switch (style) {
    case TagStyle::kNone:
      return std::string();
    case TagStyle::kOpenMpi:
      return "[" + std::to_string(spawn + 1) + "," + std::to_string(rank) + "]<" +
             stream_name(stream) + ">:";
    case TagStyle::kMpich:
      return "[" + name + "] ";
    case TagStyle::kHost:
      if (!host.empty())
        return "[" + name + "@" + std::string(host) + "]<" + stream_name(stream) + ">:";
      break;
    case TagStyle::kHorovod:
      break;
  }
  return "[" + name + "]<" + stream_name(stream) + ">:";
}

std::string format_timestamp(std::time_t t) {
  std::tm tm{};
  char buf[64];
  if (::localtime_r(&t, &tm) == nullptr || ::asctime_r(&tm, buf) == nullptr) return "?";
  std::string s(buf);
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

void ConsoleOutput::emit_lines(StreamState& s, std::string_view held, std::string_view body) {
  Destination& d = *s.dest;
  if (s.bar) {
    // The bar's final state: states that came in the same bytes as its '\n' go too, and a
    // held "50%\r" once bytes other than the '\n' follow it.
    if (!held.empty() && held.back() == '\r' && body.front() != '\n') held = {};
    const auto* nl = static_cast<const char*>(std::memchr(body.data(), '\n', body.size()));
    const std::string_view line(body.data(), nl - body.data());
    if (line.size() >= 2) {
      if (const auto* r = static_cast<const char*>(memrchr(line.data(), '\r', line.size() - 1))) {
        held = {};
        body.remove_prefix(r + 1 - body.data());
      }
    }
    end_bar(s);
  }
  if (fold_) return fold_lines(s, held, body);
  if (d.holder != nullptr && d.holder != &s) {
    StringOut q{d.queue};
    format_lines(q, stamp_, s.tag, held, body);
    return;
  }
  unshow(d);
  if (stamp_.empty() && s.tag.empty()) {
    format_lines(d.out, stamp_, s.tag, held, body);
  } else {
    format_lines_direct(d.out, stamp_, s.tag, held, body);
  }
}

bool ConsoleOutput::take(StreamState& s, std::string_view held, std::string_view tail) {
  Destination& d = *s.dest;
  if (d.holder != nullptr && d.holder != &s) {
    if (!s.waiting) {
      s.waiting = true;
      d.waiters.push_back(&s);
    }
    return false;
  }
  if (fold_) fold_out(true);
  unshow(d);
  d.holder = &s;
  d.out.append(stamp_);
  d.out.append(s.tag);
  d.out.append(held);
  d.out.append(tail);
  return true;
}

void ConsoleOutput::pass(StreamState& s, std::string_view bytes, bool line_ended) {
  Destination& d = *s.dest;
  d.out.append(bytes);
  if (line_ended) release(d);
}

void ConsoleOutput::end_unterminated(StreamState& s, std::string_view held, bool mid_line) {
  Destination& d = *s.dest;
  // Untagged and unstamped, the console gets the rank's bytes exactly (as the per-rank
  // file does): no newline is made up for a last line that had none.
  const std::string_view end = s.tag.empty() && !options_.timestamps ? "" : "\n";
  if (s.bar) end_bar(s);
  if (fold_) fold_out(true);
  if (mid_line) {
    d.out.append(end);
    release(d);
    return;
  }
  if (d.holder != nullptr && d.holder != &s) {
    StringOut q{d.queue};
    q.append(stamp_);
    q.append(s.tag);
    q.append(held);
    q.append(end);
  } else {
    unshow(d);
    d.out.append(stamp_);
    d.out.append(s.tag);
    d.out.append(held);
    d.out.append(end);
  }
}

void ConsoleOutput::release(Destination& d) {
  d.holder = nullptr;
  if (!d.queue.empty()) {
    unshow(d);
    d.out.append(d.queue);
    if (d.queue.capacity() > kKeepQueueCapacity) {
      std::string().swap(d.queue);
    } else {
      d.queue.clear();
    }
  }
  // The first stream whose own long line waited takes the fd next.
  while (!d.waiters.empty()) {
    StreamState* w = d.waiters.front();
    d.waiters.erase(d.waiters.begin());
    w->waiting = false;
    if (w->assembler.held_size() <= w->assembler.cap()) continue;
    const std::string held = w->assembler.take_held();
    unshow(d);
    d.holder = w;
    d.out.append(stamp_);
    d.out.append(w->tag);
    d.out.append(held);
    break;
  }
}

void ConsoleOutput::drop_waiter(StreamState& s) {
  auto& w = s.dest->waiters;
  w.erase(std::remove(w.begin(), w.end(), &s), w.end());
  s.waiting = false;
}

void ConsoleOutput::enforce_queue_cap(Destination& d) {
  int broken_rank = -1;
  StreamId broken_stream = StreamId::kStdout;
  while (d.holder != nullptr) {
    std::size_t queued = d.queue.size();
    for (const StreamState* w : d.waiters) queued += w->assembler.held_size();
    if (queued <= options_.queue_cap) break;
    StreamState& h = *d.holder;
    d.out.append("\n", 1);
    h.assembler.break_line();  // its continuation starts a new tagged line
    if (broken_rank < 0) {
      broken_rank = h.rank;
      broken_stream = h.stream;
    }
    release(d);
  }
  if (broken_rank >= 0 && !break_warned_) {
    break_warned_ = true;
    char msg[320];
    std::snprintf(msg, sizeof msg,
                  "rank %d's %s line grew too long while other ranks' output waited behind "
                  "it; a line break was inserted into it (no bytes were lost). Further such "
                  "breaks are not reported.",
                  broken_rank, stream_name(broken_stream));
    warn(msg);
  }
}

}  // namespace ferry
