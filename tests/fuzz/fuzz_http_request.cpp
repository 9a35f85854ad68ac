// libFuzzer: the HTTP request parser of ferryd's Horovod KV proxy, which reads whatever a
// local process sends to 127.0.0.1. Byte 0 picks the limits (0 or >= 128: the defaults;
// else small ones, so that the size checks are reached with short inputs); then the
// chunking header of chunks.hpp. The stream is parsed fed whole and fed in pieces: both
// must give the same requests and end in the same state.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chunks.hpp"
#include "ferry/rendezvous/http_request.hpp"

namespace {

using ferry::HttpLimits;
using ferry::HttpRequest;
using ferry::HttpRequestParser;

struct Outcome {
  std::vector<HttpRequest> requests;
  std::optional<ferry::HttpParseError> error;
  std::size_t buffered = 0;
};

bool same(const HttpRequest& a, const HttpRequest& b) {
  return a.method == b.method && a.target == b.target && a.minor_version == b.minor_version &&
         a.headers == b.headers && a.body == b.body && a.keep_alive == b.keep_alive;
}

bool is_tchar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

// What the API promises of one request; `raw` is exactly the bytes next() consumed for it.
void check_request(const HttpRequest& r, std::string_view raw, const HttpLimits& limits) {
  if (!is_token(r.method) || r.target.empty()) __builtin_trap();
  for (char c : r.target)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) __builtin_trap();
  if (r.minor_version != 0 && r.minor_version != 1) __builtin_trap();
  // Up to two empty lines, then the request line as sent.
  std::size_t skip = 0;
  while (skip < raw.size() && (raw[skip] == '\r' || raw[skip] == '\n')) ++skip;
  if (skip > 2) __builtin_trap();
  std::string line = r.method + " " + r.target + " HTTP/1." + char('0' + r.minor_version);
  if (raw.substr(skip, line.size()) != line) __builtin_trap();
  // The body is the last bytes consumed, and exactly Content-Length of them.
  if (r.body.size() > limits.max_body || r.body.size() > raw.size() ||
      raw.substr(raw.size() - r.body.size()) != r.body)
    __builtin_trap();
  // Every Content-Length field is 1-18 digits (leading zeros allowed) and all agree.
  for (const auto& [name, value] : r.headers) {
    if (!iequals(name, "Content-Length")) continue;
    if (value.empty() || value.size() > 18 ||
        value.find_first_not_of("0123456789") != std::string::npos ||
        std::stoull(value) != r.body.size())
      __builtin_trap();
  }
  if (!r.header("Content-Length") && !r.body.empty()) __builtin_trap();
  // The head and its blank line (CRLF or LF).
  if (raw.size() - r.body.size() - skip > limits.max_head + 2) __builtin_trap();
  if (r.headers.size() > limits.max_headers) __builtin_trap();
  for (const auto& [name, value] : r.headers) {
    if (!is_token(name) || !ferry_fuzz::within(raw, name) || !ferry_fuzz::within(raw, value))
      __builtin_trap();
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) __builtin_trap();
    if (!value.empty() && (value.front() == ' ' || value.front() == '\t' || value.back() == ' ' ||
                           value.back() == '\t'))
      __builtin_trap();
    if (!r.header(name)) __builtin_trap();
  }
  if (r.header("Transfer-Encoding")) __builtin_trap();
}

void check_error(const ferry::HttpParseError& e) {
  static constexpr int kStatuses[] = {400, 413, 431, 501, 505};
  if (std::find(std::begin(kStatuses), std::end(kStatuses), e.status) == std::end(kStatuses))
    __builtin_trap();
  if (ferry::http_reason(e.status) == "Unknown") __builtin_trap();
  if (e.reason.empty() || e.reason.find('\n') != std::string::npos) __builtin_trap();
}

// Takes every request the parser has. `stream` is all that was fed so far (`fed` bytes), so
// the bytes a request consumed can be found in it.
void drain(HttpRequestParser& p, Outcome& out, const HttpLimits& limits, std::string_view stream,
           std::size_t fed) {
  for (;;) {
    std::size_t before = fed - p.buffered();
    auto r = p.next();
    if (!r) break;
    std::size_t after = fed - p.buffered();
    if (after <= before || p.failed()) __builtin_trap();  // a request consumes its bytes
    check_request(*r, stream.substr(before, after - before), limits);
    out.requests.push_back(std::move(*r));
  }
  if (p.failed()) {
    if (p.buffered() != 0 || !p.error()) __builtin_trap();
    check_error(*p.error());
  } else if (p.buffered() > limits.max_head + limits.max_body + 4) {
    __builtin_trap();  // a drained parser holds at most one request's worth
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (in.empty()) return 0;
  HttpLimits limits;
  if (uint8_t l = static_cast<uint8_t>(in[0]); l != 0 && l < 128) {
    limits.max_head = 16 + 4 * l;
    limits.max_body = 2 * l;
    limits.max_headers = l % 8;
  }
  auto chunked = ferry_fuzz::take_chunking(in.substr(1));
  std::string_view stream = chunked.stream;

  Outcome whole;
  {
    HttpRequestParser p(limits);
    p.feed(stream);
    drain(p, whole, limits, stream, stream.size());
    whole.error = p.error();
    whole.buffered = p.buffered();
  }

  Outcome pieces;
  {
    HttpRequestParser p(limits);
    std::size_t fed = 0;
    ferry_fuzz::for_each_piece(chunked, [&](std::string_view piece) {
      bool was_failed = p.failed();
      auto error = p.error();
      p.feed(piece);
      fed += piece.size();
      if (was_failed) {
        // Failed stays failed, with the same error, whatever arrives after.
        if (p.next() || !p.failed() || p.error()->status != error->status ||
            p.error()->reason != error->reason || p.buffered() != 0)
          __builtin_trap();
        return;
      }
      drain(p, pieces, limits, stream.substr(0, fed), fed);
    });
    pieces.error = p.error();
    pieces.buffered = p.buffered();
  }

  if (whole.requests.size() != pieces.requests.size()) __builtin_trap();
  for (std::size_t i = 0; i < whole.requests.size(); ++i)
    if (!same(whole.requests[i], pieces.requests[i])) __builtin_trap();
  if (whole.error.has_value() != pieces.error.has_value()) __builtin_trap();
  if (whole.error &&
      (whole.error->status != pieces.error->status || whole.error->reason != pieces.error->reason))
    __builtin_trap();
  if (whole.buffered != pieces.buffered) __builtin_trap();

  // The reply side: a response for any parsed body stays well-formed.
  for (const auto& r : whole.requests) {
    std::string reply = ferry::format_http_response(200, r.body, r.keep_alive);
    if (reply.size() < r.body.size() ||
        reply.compare(reply.size() - r.body.size(), r.body.size(), r.body) != 0)
      __builtin_trap();
  }
  return 0;
}
