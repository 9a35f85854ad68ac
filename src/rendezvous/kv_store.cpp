#include "ferry/rendezvous/kv_store.hpp"

namespace ferry {

std::string store_full_message(std::string_view store) {
  return "its puts passed the " + std::to_string(kStoreLimitBytes >> 20) + " MiB the job's " +
         std::string(store) + " holds at most (ferry's bound on each rendezvous store); ferryd " +
         "stopped it";
}

void KvStore::set_scope_size(const std::string& scope, int ranks) {
  if (ranks > 0) sizes_[scope] = ranks;
}

bool KvStore::put(const std::string& scope, const std::string& key, std::string value) {
  // The bytes held after the put: a new scope adds its name, a new key its name; a value
  // replaces the one before.
  std::size_t after = bytes_ + value.size();
  auto s = data_.find(scope);
  if (s == data_.end())
    after += scope.size() + key.size();
  else if (auto k = s->second.find(key); k != s->second.end())
    after -= k->second.size();
  else
    after += key.size();
  if (after > limit_) return false;
  bytes_ = after;
  data_[scope][key] = std::move(value);
  return true;
}

std::optional<std::string> KvStore::get(const std::string& scope, const std::string& key) const {
  auto s = data_.find(scope);
  if (s == data_.end()) return std::nullopt;
  auto k = s->second.find(key);
  if (k == s->second.end()) return std::nullopt;
  return k->second;
}

void KvStore::drop(const std::string& scope) {
  auto s = data_.find(scope);
  if (s == data_.end()) return;
  for (const auto& [k, v] : s->second) bytes_ -= k.size() + v.size();
  bytes_ -= s->first.size();
  data_.erase(s);
}

void KvStore::finish(const std::string& scope, const std::string& key) {
  auto size = sizes_.find(scope);
  if (size != sizes_.end()) {
    // Counted per scope and per distinct rank (horovod's server keeps one list and clears
    // every scope's list when any scope completes, and counts a repeated DELETE twice).
    auto& done = finished_[scope];
    done.insert(key);
    if (static_cast<int>(done.size()) >= size->second) {
      drop(scope);
      finished_.erase(scope);
    }
    return;
  }
  auto s = data_.find(scope);
  if (s == data_.end()) return;
  auto k = s->second.find(key);
  if (k != s->second.end()) {
    bytes_ -= k->first.size() + k->second.size();
    s->second.erase(k);
  }
  if (s->second.empty()) {
    bytes_ -= s->first.size();
    data_.erase(s);
  }
}

KvReply KvStore::serve(std::string_view method, std::string_view target, std::string body) {
  // Exactly "/<scope>/<key>". The query string, if any, is not part of the key.
  std::string_view path = target.substr(0, target.find('?'));
  if (path.size() < 4 || path.front() != '/') return {400, ""};
  path.remove_prefix(1);
  auto slash = path.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == path.size() ||
      path.find('/', slash + 1) != std::string_view::npos)
    return {400, ""};
  std::string scope(path.substr(0, slash));
  std::string key(path.substr(slash + 1));
  if (method == "GET") {
    auto v = get(scope, key);
    if (!v) return {404, ""};
    return {200, std::move(*v)};
  }
  if (method == "PUT") {
    if (!put(scope, key, std::move(body))) return {kStoreFullStatus, ""};
    return {200, ""};
  }
  if (method == "DELETE") {
    finish(scope, key);
    return {200, ""};
  }
  return {405, ""};
}

void declare_horovod_scopes(KvStore& store, const Placement& placement) {
  store.set_scope_size("global", placement.world_size);
  for (const auto& host : placement.hosts) {
    store.set_scope_size("local_" + host.label, static_cast<int>(host.ranks.size()));
    for (const auto& r : host.ranks)
      store.set_scope_size("cross_" + std::to_string(r.local_rank), r.cross_size);
  }
}

}  // namespace ferry
