// libFuzzer: the PMI-1 reader, which takes whatever a rank writes to its PMI socket. Byte 0
// picks the line limit (0 or >= 128: kPmiMaxLine; else that many bytes, so that the limit
// is reached with short inputs); then the chunking header of chunks.hpp. The stream is
// read fed whole and fed in pieces: both must give the same commands and end in the same
// state, and a drained reader never holds more than one line.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chunks.hpp"
#include "ferry/rendezvous/pmi_wire.hpp"

namespace {

using ferry::PmiCommand;
using ferry::PmiReader;

struct Outcome {
  std::vector<PmiCommand> commands;
  std::optional<std::string> error;
  std::size_t buffered = 0;
  std::size_t end = 0;  // where the last command's bytes ended in the stream
};

bool same(const PmiCommand& a, const PmiCommand& b) {
  return a.cmd == b.cmd && a.multi == b.multi && a.args == b.args;
}

bool is_key(std::string_view k) {
  if (k.empty()) return false;
  for (char c : k)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
          c == '-' || c == '/'))
      return false;
  return true;
}

// A value of a single-line command: no NUL or tab, and a space only after a backslash.
bool single_line_value(std::string_view v) {
  bool escaped = false;
  for (char c : v) {
    if (c == '\0' || c == '\t' || (c == ' ' && !escaped)) return false;
    escaped = !escaped && c == '\\';
  }
  return true;
}

// What the API promises of one command; `raw` is exactly the bytes next() consumed for it.
void check_command(const PmiCommand& c, std::string_view raw, std::size_t max_line) {
  if (c.cmd.empty() || !ferry_fuzz::within(raw, c.cmd)) __builtin_trap();
  for (const auto& [k, v] : c.args) {
    if (!is_key(k) || !ferry_fuzz::within(raw, k) || !ferry_fuzz::within(raw, v)) __builtin_trap();
    if (v.find('\n') != std::string::npos || v.size() > max_line) __builtin_trap();
    // get() finds the first argument of a name.
    auto first = std::find_if(c.args.begin(), c.args.end(),
                              [&k = k](const auto& a) { return a.first == k; });
    if (c.get(k) != std::string_view(first->second)) __builtin_trap();
  }
  if (c.cmd.find('\n') != std::string::npos) __builtin_trap();
  if (c.multi) {
    if (c.args.size() > 4096) __builtin_trap();
    return;
  }
  if (!single_line_value(c.cmd)) __builtin_trap();
  for (const auto& [k, v] : c.args)
    if (!single_line_value(v)) __builtin_trap();

  // Formatting a parsed command and parsing it again gives it back. (A backslash that
  // escapes nothing can only end the line, and format_pmi() keeps it last. A CR that ends
  // the line's last value does not come back: the reader and parse_pmi_line() each take
  // one off the end as part of the line end.)
  std::string_view last = c.args.empty() ? c.cmd : c.args.back().second;
  if (!last.empty() && last.back() == '\r') return;
  std::string line = ferry::format_pmi(c.cmd, c.args);
  if (line.empty() || line.back() != '\n') __builtin_trap();
  line.pop_back();
  auto again = ferry::parse_pmi_line(line);
  if (!again) __builtin_trap();
  // A bare `key` comes back as `key=`, with the same empty value.
  if (!same(c, *again)) __builtin_trap();
}

void drain(PmiReader& r, Outcome& out, std::size_t max_line, std::string_view stream,
           std::size_t fed) {
  for (;;) {
    std::size_t before = fed - r.buffered();
    auto c = r.next();
    if (!c) {
      if (c.error().message.empty() || c.error().message.find('\n') != std::string::npos)
        __builtin_trap();
      out.error = c.error().message;
      if (r.buffered() != 0) __builtin_trap();
      return;
    }
    if (!*c) break;
    // The reader consumes the lines of an mcmd block as they come, in earlier calls: the
    // command's bytes start where the previous command's ended.
    std::size_t after = fed - r.buffered();
    if (after <= before || out.end > before) __builtin_trap();
    check_command(**c, stream.substr(out.end, after - out.end), max_line);
    out.end = after;
    out.commands.push_back(std::move(**c));
  }
  // Bounded memory: whatever a rank sends, a drained reader keeps at most one line.
  if (r.buffered() > max_line) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (in.empty()) return 0;
  std::size_t max_line = ferry::kPmiMaxLine;
  if (uint8_t l = static_cast<uint8_t>(in[0]); l != 0 && l < 128) max_line = l;
  auto chunked = ferry_fuzz::take_chunking(in.substr(1));
  std::string_view stream = chunked.stream;

  Outcome whole;
  {
    PmiReader r(max_line);
    r.feed(stream);
    drain(r, whole, max_line, stream, stream.size());
    whole.buffered = r.buffered();
  }

  Outcome pieces;
  {
    PmiReader r(max_line);
    std::size_t fed = 0;
    ferry_fuzz::for_each_piece(chunked, [&](std::string_view piece) {
      r.feed(piece);
      fed += piece.size();
      if (pieces.error) {
        // Failed stays failed, with the same error, whatever arrives after.
        auto again = r.next();
        if (again || again.error().message != *pieces.error || r.buffered() != 0) __builtin_trap();
        return;
      }
      drain(r, pieces, max_line, stream.substr(0, fed), fed);
    });
    pieces.buffered = r.buffered();
  }

  if (whole.commands.size() != pieces.commands.size()) __builtin_trap();
  for (std::size_t i = 0; i < whole.commands.size(); ++i)
    if (!same(whole.commands[i], pieces.commands[i])) __builtin_trap();
  if (whole.error != pieces.error || whole.buffered != pieces.buffered) __builtin_trap();

  // The single-line parser on its own, on the stream's first line.
  (void)ferry::parse_pmi_line(stream.substr(0, stream.find('\n')));
  return 0;
}
