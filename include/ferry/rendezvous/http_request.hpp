#pragma once
/// \file
/// A small incremental HTTP/1.1 request parser and response formatter: just what Horovod's
/// gloo HTTPStore client speaks. The client (horovod
/// `horovod/common/gloo/http_store.cc` over elnormous/HTTPRequest) opens one connection per
/// request and sends `METHOD /scope/key HTTP/1.1`, `Host:`, always `Content-Length:`, then
/// the body; it reads the reply until Content-Length bytes arrived or the peer closed.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// One parsed request. Header names keep their spelling; look them up with header().
struct HttpRequest {
  std::string method;     ///< "GET", "PUT", "DELETE", ... (case kept; methods are case-sensitive)
  std::string target;     ///< the request target as sent ("/global/rank_0")
  int minor_version = 1;  ///< 0 for HTTP/1.0, 1 for HTTP/1.1
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  /// Whether the connection may carry another request after this one (HTTP/1.1 without
  /// `Connection: close`, or HTTP/1.0 with `Connection: keep-alive`).
  bool keep_alive = true;

  /// Value of the first header named `name` (case-insensitive), or nothing.
  std::optional<std::string_view> header(std::string_view name) const;
};

/// Limits that keep one connection from holding unbounded memory.
struct HttpLimits {
  std::size_t max_head = std::size_t{16} << 10;  ///< request line + headers, bytes
  std::size_t max_body = std::size_t{64} << 20;  ///< Content-Length accepted
  std::size_t max_headers = 100;
};

/// A request that cannot be served; `status` is the HTTP status to answer with (400, 413,
/// 431, 501, 505) before closing the connection.
struct HttpParseError {
  int status = 400;
  std::string reason;  ///< one line, for logs
};

/// Cuts a byte stream from one connection into requests. Feed bytes as they arrive, then
/// call next() until it returns nothing. After an error the parser stays failed: answer
/// with error()->status and close the connection.
class HttpRequestParser {
 public:
  explicit HttpRequestParser(HttpLimits limits = {}) : limits_(limits) {}

  /// Appends received bytes.
  void feed(std::string_view bytes);
  /// The next complete request, or nothing if more bytes are needed or the parser failed
  /// (check failed()).
  std::optional<HttpRequest> next();
  /// Whether the stream was found malformed or over a limit.
  bool failed() const { return error_.has_value(); }
  const std::optional<HttpParseError>& error() const { return error_; }
  /// Bytes received and not yet consumed by a returned request.
  std::size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::optional<HttpRequest> fail(int status, std::string reason);
  HttpLimits limits_;
  std::string buf_;
  std::size_t pos_ = 0;
  std::optional<HttpParseError> error_;
};

/// The standard reason phrase of `status` ("OK", "Not Found", ...), "Unknown" otherwise.
std::string_view http_reason(int status);

/// Formats a complete HTTP/1.1 response with `Content-Length` (always present, even for 0:
/// the gloo client only stops reading at Content-Length or EOF) and `Connection: close`
/// unless `keep_alive`. The header is spelled exactly "Content-Length" because that client
/// compares header names case-sensitively.
std::string format_http_response(int status, std::string_view body, bool keep_alive);

}  // namespace ferry
