#include "ferry/daemon/own_name.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "ferry/common/environ.hpp"
#include "ferry/common/posix_handles.hpp"
#include "ferry/common/text.hpp"

namespace ferry {
namespace {

std::string numeric_address(const addrinfo& a) {
  char buf[NI_MAXHOST] = {};
  if (::getnameinfo(a.ai_addr, a.ai_addrlen, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST) != 0)
    return "?";
  return buf;
}

const char kNeed[] = "Horovod's gloo needs this host's name to resolve to one of its addresses";

}  // namespace

std::string own_host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

bool uses_horovod_gloo(const std::vector<std::string>& env) {
  if (!env_value(env, "HOROVOD_GLOO_RENDEZVOUS_ADDR")) return false;
  auto controller = env_value(env, "HOROVOD_CONTROLLER");
  return !controller || controller->empty() || lower(*controller) == "gloo";
}

Status check_own_name(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &found);
  if (rc != 0)
    return make_error(std::string(kNeed) + ", but '" + name + "' does not resolve here (" +
                      ::gai_strerror(rc) + "): add it to /etc/hosts on " + name);
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, ::freeaddrinfo);
  std::vector<std::string> others;
  for (const addrinfo* a = list.get(); a; a = a->ai_next) {
    UniqueFd s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (s && ::bind(s.get(), a->ai_addr, a->ai_addrlen) == 0) return {};
    std::string addr = numeric_address(*a);
    if (std::find(others.begin(), others.end(), addr) == others.end())
      others.push_back(std::move(addr));
  }
  std::string listed;
  for (const auto& addr : others) listed += (listed.empty() ? "" : ", ") + addr;
  return make_error(std::string(kNeed) + ", but '" + name + "' resolves here to " + listed +
                    ", not an address of this host: fix /etc/hosts (or DNS) on " + name);
}

Status own_name_unanswered(const std::string& name, std::chrono::milliseconds waited) {
  const auto ms = waited.count();
  const std::string after =
      ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
  return make_error(std::string(kNeed) + ", but looking '" + name + "' up had not returned after " +
                    after + " (a DNS server that does not answer?): add it to /etc/hosts on " +
                    name);
}

// What a lookup's thread shares with the loop: whether anyone still takes its result.
struct OwnNameCheck::Shared {
  std::mutex mutex;
  asio::io_context* io = nullptr;  // null once dropped: the thread posts nothing
  OwnNameCheck* owner = nullptr;   // read on the loop only
};

OwnNameCheck::OwnNameCheck(asio::io_context& io, LookUp look_up)
    : io_(io), look_up_(std::move(look_up)), limit_(io) {}

OwnNameCheck::~OwnNameCheck() {
  try {
    drop();
  } catch (const std::system_error&) {
    // A mutex or timer that failed at the end: the thread finds no one to hand over to.
  }
}

void OwnNameCheck::start(const std::string& name, std::function<void(const Status&)> result) {
  drop();
  auto shared = std::make_shared<Shared>();
  shared->io = &io_;
  shared->owner = this;
  shared_ = shared;
  result_ = std::move(result);
  busy_.emplace(io_.get_executor());
  auto look = [shared, name, look_up = look_up_] {
    Status st = look_up(name);
    std::lock_guard lock(shared->mutex);
    if (!shared->io) return;
    asio::post(*shared->io, [shared, st = std::move(st)] {
      if (shared->owner) shared->owner->finished(st);
    });
  };
  try {
    std::thread(look).detach();
  } catch (const std::system_error&) {
    look();  // no thread to be had: the lookup waits here, as it always did
  }
}

void OwnNameCheck::finished(const Status& st) {
  auto result = std::move(result_);
  auto waiting = std::move(waiting_);
  auto within = std::move(within_);
  drop();
  if (result) result(st);
  for (auto& f : waiting) f();
  if (within) within(true);
}

void OwnNameCheck::then(std::function<void()> f) {
  if (pending())
    waiting_.push_back(std::move(f));
  else
    asio::post(io_, std::move(f));
}

void OwnNameCheck::within(std::chrono::milliseconds limit, std::function<void(bool)> f) {
  if (!pending()) return asio::post(io_, [f = std::move(f)] { f(true); });
  if (within_) return;
  within_ = std::move(f);
  limit_.expires_after(limit);
  limit_.async_wait([this](std::error_code ec) {
    if (ec || !within_) return;
    auto f = std::move(within_);
    drop();
    f(false);
  });
}

void OwnNameCheck::drop() {
  if (shared_) {
    std::lock_guard lock(shared_->mutex);
    shared_->io = nullptr;
    shared_->owner = nullptr;
  }
  shared_.reset();
  busy_.reset();
  result_ = nullptr;
  waiting_.clear();
  within_ = nullptr;
  limit_.cancel();
}

}  // namespace ferry
