#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "ferry/rendezvous/http_request.hpp"
#include "ferry/rendezvous/kv_store.hpp"

namespace ferry {
namespace {

// Exactly what horovod's gloo HTTPStore (elnormous/HTTPRequest) sends.
std::string gloo_request(const std::string& method, const std::string& path,
                         const std::string& body) {
  return method + " " + path +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

TEST(HttpRequestParser, ParsesGlooPutWithBody) {
  HttpRequestParser p;
  p.feed(gloo_request("PUT", "/global/0", std::string("ab\0cd", 5)));
  auto r = p.next();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->method, "PUT");
  EXPECT_EQ(r->target, "/global/0");
  EXPECT_EQ(r->body, std::string("ab\0cd", 5));
  EXPECT_EQ(r->header("content-length"), "5");
  EXPECT_EQ(r->header("HOST"), "127.0.0.1");
  EXPECT_TRUE(r->keep_alive);
  EXPECT_FALSE(p.next());
  EXPECT_FALSE(p.failed());
  EXPECT_EQ(p.buffered(), 0u);
}

TEST(HttpRequestParser, WaitsForBytesSplitAnywhere) {
  const std::string req = gloo_request("PUT", "/local_a/1", "0123456789");
  for (std::size_t cut = 0; cut < req.size(); ++cut) {
    HttpRequestParser p;
    p.feed(req.substr(0, cut));
    EXPECT_FALSE(p.next()) << cut;
    EXPECT_FALSE(p.failed()) << cut;
    p.feed(req.substr(cut));
    auto r = p.next();
    ASSERT_TRUE(r) << cut;
    EXPECT_EQ(r->body, "0123456789");
  }
}

TEST(HttpRequestParser, KeepAliveCarriesSeveralRequests) {
  HttpRequestParser p;
  p.feed(gloo_request("GET", "/global/1", "") + gloo_request("DELETE", "/global/0", "") +
         "GET /x/y HTTP/1.1\r\nConnection: close\r\n\r\n");
  auto a = p.next(), b = p.next(), c = p.next();
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->method, "GET");
  EXPECT_EQ(b->method, "DELETE");
  EXPECT_TRUE(b->keep_alive);
  EXPECT_FALSE(c->keep_alive);
  EXPECT_EQ(c->body, "");
}

TEST(HttpRequestParser, Http10ClosesUnlessKeepAlive) {
  HttpRequestParser p;
  p.feed("GET /a/b HTTP/1.0\r\n\r\nGET /a/b HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
  auto a = p.next(), b = p.next();
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(a->keep_alive);
  EXPECT_TRUE(b->keep_alive);
  EXPECT_EQ(a->minor_version, 0);
}

TEST(HttpRequestParser, AcceptsBareLineFeeds) {
  HttpRequestParser p;
  p.feed("PUT /s/k HTTP/1.1\nContent-Length: 2\n\nhi");
  auto r = p.next();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "hi");
}

struct BadCase {
  const char* name;
  std::string bytes;
  int status;
};

TEST(HttpRequestParser, RefusesGarbageWithTheRightStatus) {
  const BadCase cases[] = {
      {"tls hello", std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11), 400},
      {"no version", "GET /a/b\r\n\r\n", 400},
      {"two spaces", "GET  /a/b HTTP/1.1\r\n\r\n", 400},
      {"http2", "GET /a/b HTTP/2.0\r\n\r\n", 505},
      {"bad header", "GET /a/b HTTP/1.1\r\nno colon here\r\n\r\n", 400},
      {"folded", "GET /a/b HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 400},
      {"bad length", "PUT /a/b HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"conflicting length",
       "PUT /a/b HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
      {"chunked", "PUT /a/b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501},
      {"ctl in target", "GET /a\x01/b HTTP/1.1\r\n\r\n", 400},
  };
  for (const auto& c : cases) {
    HttpRequestParser p;
    p.feed(c.bytes);
    EXPECT_FALSE(p.next()) << c.name;
    ASSERT_TRUE(p.failed()) << c.name;
    EXPECT_EQ(p.error()->status, c.status) << c.name;
    // Stays failed; more bytes change nothing.
    p.feed(gloo_request("GET", "/a/b", ""));
    EXPECT_FALSE(p.next()) << c.name;
  }
}

// What a parser made of `bytes`, fed in reads of `read` bytes (0: all at once): the
// requests' methods and targets, then the error status (0: none).
std::string outcome(const std::string& bytes, size_t read, HttpLimits limits = {}) {
  HttpRequestParser p(limits);
  std::string out;
  for (size_t at = 0; at < bytes.size();) {
    size_t n = read == 0 ? bytes.size() : std::min(read, bytes.size() - at);
    p.feed(std::string_view(bytes).substr(at, n));
    at += n;
    while (auto r = p.next()) out += r->method + " " + r->target + "; ";
  }
  return out + std::to_string(p.failed() ? p.error()->status : 0);
}

// The verdict on a stream is the same however it is cut into reads (found by fuzz_http_request).
TEST(HttpRequestParser, VerdictDoesNotDependOnReads) {
  // Garbage longer than the head limit: refused as garbage (400), not as too long (431),
  // when it arrives whole as when it trickles in.
  const std::string tls = std::string("\x16\x03\x01", 3) + std::string(20000, 'x');
  // A method longer than any real one: refused, even when the whole head arrives at once.
  const std::string long_method = std::string(40, 'A') + " /a/b HTTP/1.1\r\n\r\n";
  for (size_t read : {0, 1, 7, 4096}) {
    EXPECT_EQ(outcome(tls, read), "400") << read;
    EXPECT_EQ(outcome(long_method, read), "400") << read;
  }
  // A head of exactly max_head bytes is accepted, also when a read ends between the CR and
  // the LF of its blank line.
  HttpLimits lim;
  lim.max_head = 64;
  std::string head = "GET /a/b HTTP/1.1\r\nX: ";
  head += std::string(lim.max_head - head.size() - 2, 'x') + "\r\n";
  ASSERT_EQ(head.size(), lim.max_head);
  for (size_t read : {0, 1, 5, 65})
    EXPECT_EQ(outcome(head + "\r\n", read, lim), "GET /a/b; 0") << read;
  EXPECT_EQ(outcome(head + "X\r\n", 1, lim), "431");
}

TEST(HttpRequestParser, EnforcesLimits) {
  HttpLimits lim;
  lim.max_head = 64;
  lim.max_body = 10;
  {
    HttpRequestParser p(lim);
    p.feed("GET /a/b HTTP/1.1\r\nX-Long: " + std::string(100, 'x'));
    EXPECT_FALSE(p.next());
    ASSERT_TRUE(p.failed());
    EXPECT_EQ(p.error()->status, 431);
  }
  {
    HttpRequestParser p(lim);
    p.feed("PUT /a/b HTTP/1.1\r\nContent-Length: 11\r\n\r\n");
    EXPECT_FALSE(p.next());
    ASSERT_TRUE(p.failed());
    EXPECT_EQ(p.error()->status, 413);
  }
  {
    HttpLimits few;
    few.max_headers = 2;
    HttpRequestParser p(few);
    p.feed("GET /a/b HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n");
    EXPECT_FALSE(p.next());
    ASSERT_TRUE(p.failed());
    EXPECT_EQ(p.error()->status, 431);
  }
}

TEST(HttpResponse, AlwaysCarriesContentLengthSpelledForGloo) {
  EXPECT_EQ(format_http_response(404, "", false),
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(format_http_response(200, "abc", true),
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(format_http_response(403, "", false).substr(0, 24), "HTTP/1.1 403 Forbidden\r\n");
}

// ---- KvStore ------------------------------------------------------------------------------

TEST(KvStore, PutGetAnd404WhileAbsent) {
  KvStore s;
  EXPECT_EQ(s.serve("GET", "/global/0", "").status, 404);
  EXPECT_EQ(s.serve("GET", "/global/0", "").body, "");
  EXPECT_EQ(s.serve("PUT", "/global/0", "addr0").status, 200);
  auto r = s.serve("GET", "/global/0", "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "addr0");
  s.serve("PUT", "/global/0", "addr0b");
  EXPECT_EQ(s.serve("GET", "/global/0", "").body, "addr0b");
  EXPECT_EQ(s.bytes(), 6u + 6u + 1u);  // "addr0b", "global", "0"
  // Scopes are separate.
  EXPECT_EQ(s.serve("GET", "/local_a/0", "").status, 404);
}

// A rank that puts without end meets the limit: the put that would pass it is refused with
// 507 and changes nothing; what is freed (DELETE, a smaller value) can be used again.
TEST(KvStore, PutsPastTheLimitAreRefusedAndChangeNothing) {
  KvStore s(32);
  EXPECT_EQ(s.serve("PUT", "/sc/k1", std::string(20, 'a')).status, 200);  // 2 + 2 + 20
  EXPECT_EQ(s.bytes(), 24u);
  EXPECT_EQ(s.serve("PUT", "/sc/k2", std::string(7, 'b')).status, kStoreFullStatus);  // 33
  EXPECT_FALSE(s.get("sc", "k2"));
  EXPECT_EQ(s.bytes(), 24u);
  EXPECT_EQ(s.serve("PUT", "/sc/k1", std::string(28, 'c')).status, 200);  // replaces: 32
  EXPECT_EQ(s.serve("PUT", "/other/k", "").status, kStoreFullStatus);     // a new scope's name
  EXPECT_EQ(s.get("sc", "k1"), std::string(28, 'c'));
  s.serve("DELETE", "/sc/k1", "");  // an ad-hoc scope: the key and the emptied scope go
  EXPECT_EQ(s.bytes(), 0u);
  EXPECT_EQ(s.serve("PUT", "/sc/k2", std::string(7, 'b')).status, 200);
  EXPECT_EQ(kStoreLimitBytes, std::size_t{64} << 20);
  EXPECT_EQ(KvStore().serve("PUT", "/a/b", std::string(1 << 20, 'x')).status, 200);
}

TEST(KvStore, RefusesBadPathsAndMethods) {
  KvStore s;
  for (const char* t : {"/", "/global", "/global/", "//k", "/a/b/c", "global/k", "/a//"})
    EXPECT_EQ(s.serve("GET", t, "").status, 400) << t;
  EXPECT_EQ(s.serve("POST", "/a/b", "").status, 405);
  EXPECT_EQ(s.serve("HEAD", "/a/b", "").status, 405);
  EXPECT_EQ(s.serve("PUT", "/a/b?x=1", "v").status, 200);
  EXPECT_EQ(s.get("a", "b"), "v");
}

TEST(KvStore, KnownScopeIsDroppedAfterAllRanksDeleted) {
  KvStore s;
  s.set_scope_size("global", 3);
  s.set_scope_size("cross_0", 2);
  s.put("global", "0", "a");
  s.put("global", "1", "b");
  s.put("cross_0", "0", "c");
  s.serve("DELETE", "/global/0", "");
  s.serve("DELETE", "/global/0", "");  // a repeated DELETE counts once
  s.serve("DELETE", "/global/1", "");
  EXPECT_EQ(s.get("global", "0"), "a");
  s.serve("DELETE", "/cross_0/1", "");  // another scope's progress is its own
  EXPECT_EQ(s.serve("DELETE", "/global/2", "").status, 200);
  EXPECT_FALSE(s.get("global", "0"));
  EXPECT_FALSE(s.get("global", "1"));
  EXPECT_EQ(s.get("cross_0", "0"), "c");
  EXPECT_EQ(s.scope_count(), 1u);
  // A second round in the same scope (hvd.shutdown(); hvd.init()) starts afresh.
  s.put("global", "0", "x");
  s.finish("global", "0");
  s.finish("global", "1");
  EXPECT_EQ(s.get("global", "0"), "x");
  s.finish("global", "2");
  EXPECT_FALSE(s.get("global", "0"));
}

TEST(KvStore, AdHocScopeDeletesTheNamedKey) {
  KvStore s;
  s.put("global_process_set_hash_ab", "0", "a");
  s.put("global_process_set_hash_ab", "1", "b");
  s.finish("global_process_set_hash_ab", "0");
  EXPECT_FALSE(s.get("global_process_set_hash_ab", "0"));
  EXPECT_EQ(s.get("global_process_set_hash_ab", "1"), "b");
  s.finish("global_process_set_hash_ab", "1");
  EXPECT_EQ(s.scope_count(), 0u);
  EXPECT_EQ(s.bytes(), 0u);
  s.finish("never_seen", "3");  // harmless
}

TEST(KvStore, DeclaresHorovodScopesFromPlacement) {
  // a:1,b:2 → (a,r0,l0,cs2) (b,r1,l0,cs2) (b,r2,l1,cs1)
  auto hl = parse_host_option("a:1,b:2");
  ASSERT_TRUE(hl) << hl.error().message;
  auto p = place_ranks(*hl, 3, false);
  ASSERT_TRUE(p) << p.error().message;
  KvStore s;
  declare_horovod_scopes(s, *p);
  auto fill_and_finish = [&](const std::string& scope, int n) {
    s.put(scope, "k", "v");
    for (int i = 0; i < n; ++i) {
      EXPECT_TRUE(s.get(scope, "k")) << scope << " dropped after " << i;
      s.finish(scope, std::to_string(i));
    }
    EXPECT_FALSE(s.get(scope, "k")) << scope << " kept after " << n;
  };
  fill_and_finish("global", 3);
  fill_and_finish("local_" + p->hosts[0].label, 1);
  fill_and_finish("local_" + p->hosts[1].label, 2);
  fill_and_finish("cross_0", 2);
  fill_and_finish("cross_1", 1);
}

}  // namespace
}  // namespace ferry
