#include "ferry/rendezvous/http_request.hpp"

#include <algorithm>
#include <cctype>

namespace ferry {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Longest method accepted; real ones are a few letters.
constexpr std::size_t kMaxMethod = 32;

// RFC 9110 token characters (method and header names).
bool is_tchar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits off one line ending in "\r\n" or a bare "\n" (tolerated, as most servers do).
std::string_view cut_line(std::string_view& rest) {
  auto nl = rest.find('\n');
  std::string_view line = rest.substr(0, nl);
  rest.remove_prefix(nl + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool contains_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    auto comma = list.find(',');
    if (iequals(trim_ows(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// Why a request is refused: the status to answer and a reason.
struct Fault {
  int status;
  const char* reason;
};

// Request line: METHOD SP target SP HTTP/1.x, into `req`.
std::optional<Fault> parse_request_line(std::string_view line, HttpRequest& req) {
  auto sp1 = line.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return Fault{400, "malformed request line"};
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method) || target.empty() || std::any_of(target.begin(), target.end(), [](char c) {
        return static_cast<unsigned char>(c) <= ' ' || c == 0x7f;
      }))
    return Fault{400, "malformed request line"};
  if (version.size() != 8 || version.substr(0, 7) != "HTTP/1." ||
      (version[7] != '0' && version[7] != '1'))
    return Fault{version.substr(0, 5) == "HTTP/" ? 505 : 400, "unsupported HTTP version"};
  req.method = method;
  req.target = target;
  req.minor_version = version[7] - '0';
  return std::nullopt;
}

// The header fields that follow the request line in `head`, into `req`.
std::optional<Fault> parse_header_fields(std::string_view head, std::size_t max_headers,
                                         HttpRequest& req) {
  while (!head.empty()) {
    std::string_view h = cut_line(head);
    if (h.empty()) break;
    if (h.front() == ' ' || h.front() == '\t') return Fault{400, "folded header line"};
    auto colon = h.find(':');
    if (colon == std::string_view::npos || !is_token(h.substr(0, colon)))
      return Fault{400, "malformed header line"};
    if (req.headers.size() >= max_headers) return Fault{431, "too many header fields"};
    std::string_view value = trim_ows(h.substr(colon + 1));
    if (std::any_of(value.begin(), value.end(), [](char c) { return c == '\0' || c == '\r'; }))
      return Fault{400, "control character in a header value"};
    req.headers.emplace_back(std::string(h.substr(0, colon)), std::string(value));
  }
  return std::nullopt;
}

// The body's length from Content-Length (0 without one); Transfer-Encoding is refused.
std::optional<Fault> body_length(const HttpRequest& req, std::size_t& length) {
  if (req.header("Transfer-Encoding"))
    return Fault{501, "Transfer-Encoding is not supported (send Content-Length)"};
  length = 0;
  bool have_length = false;
  for (const auto& [k, v] : req.headers) {
    if (!iequals(k, "Content-Length")) continue;
    if (v.empty() || v.size() > 18 ||
        !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return Fault{400, "malformed Content-Length"};
    std::size_t n = std::stoull(v);
    if (have_length && n != length) return Fault{400, "conflicting Content-Length fields"};
    length = n;
    have_length = true;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return std::string_view(v);
  return std::nullopt;
}

void HttpRequestParser::feed(std::string_view bytes) {
  if (failed()) return;
  // Compact before growing so a long keep-alive connection does not accumulate.
  if (pos_ > 0 && pos_ >= buf_.size() / 2) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(bytes);
}

std::optional<HttpRequest> HttpRequestParser::fail(int status, std::string reason) {
  error_ = HttpParseError{status, std::move(reason)};
  buf_.clear();
  pos_ = 0;
  return std::nullopt;
}

std::optional<HttpRequest> HttpRequestParser::next() {
  if (failed()) return std::nullopt;
  std::string_view avail(buf_.data() + pos_, buf_.size() - pos_);
  // RFC 9112 §2.2: ignore empty lines before the request line.
  std::size_t skip = 0;
  while (skip < avail.size() && (avail[skip] == '\r' || avail[skip] == '\n')) ++skip;
  if (skip > 2) return fail(400, "blank lines before the request line");
  avail.remove_prefix(skip);

  // Reject an obviously foreign stream early instead of waiting for a blank line (a TLS
  // hello, an SSH banner): the method must be a short token up to the first space. The
  // verdict on a stream must not depend on how it was cut into reads, so this looks at as
  // much of the method as has arrived, but never past what the head may take: beyond that
  // the head is too long, whatever the method.
  std::string_view method_part = avail.substr(0, std::min(avail.find(' '), limits_.max_head + 1));
  if (method_part.size() > kMaxMethod ||
      !std::all_of(method_part.begin(), method_part.end(), is_tchar))
    return fail(400, "malformed request line");

  // Find the end of the head: an empty line.
  std::size_t head_end = std::string_view::npos, body_start = 0;
  for (std::size_t i = avail.find('\n'); i != std::string_view::npos; i = avail.find('\n', i + 1)) {
    std::size_t j = i + 1;
    if (j < avail.size() && avail[j] == '\n') {
      head_end = i + 1;
      body_start = j + 1;
      break;
    }
    if (j + 1 < avail.size() && avail[j] == '\r' && avail[j + 1] == '\n') {
      head_end = i + 1;
      body_start = j + 2;
      break;
    }
    if (j > limits_.max_head) break;
  }
  if (head_end == std::string_view::npos) {
    // One byte of slack: a head of exactly max_head bytes may have the CR of its blank line
    // here and the LF still on its way.
    if (avail.size() > limits_.max_head + 1) return fail(431, "request head over the size limit");
    return std::nullopt;
  }
  if (head_end > limits_.max_head) return fail(431, "request head over the size limit");

  std::string_view head = avail.substr(0, head_end);
  HttpRequest req;
  std::size_t length = 0;
  std::optional<Fault> fault = parse_request_line(cut_line(head), req);
  if (!fault) fault = parse_header_fields(head, limits_.max_headers, req);
  if (!fault) fault = body_length(req, length);
  if (fault) return fail(fault->status, fault->reason);
  if (length > limits_.max_body) return fail(413, "request body over the size limit");
  if (avail.size() - body_start < length) return std::nullopt;  // body still arriving

  req.body.assign(avail.substr(body_start, length));
  auto conn = req.header("Connection");
  if (req.minor_version == 0)
    req.keep_alive = conn && contains_token(*conn, "keep-alive");
  else
    req.keep_alive = !(conn && contains_token(*conn, "close"));
  pos_ += skip + body_start + length;
  return req;
}

std::string_view http_reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

std::string format_http_response(int status, std::string_view body, bool keep_alive) {
  std::string out;
  out.reserve(96 + body.size());
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += http_reason(status);
  out += "\r\nContent-Length: ";
  out += std::to_string(body.size());
  out += keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n";
  out += body;
  return out;
}

}  // namespace ferry
