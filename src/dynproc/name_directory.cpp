#include "ferry/dynproc/name_directory.hpp"

#include <algorithm>

namespace ferry {

int32_t NameDirectory::publish(const ProcId& owner, const std::vector<Entry>& entries,
                               bool first_read, std::vector<Answer>& released) {
  std::size_t added = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& key = entries[i].key;
    if (key.empty()) return kPmixErrBadParam;
    if (names_.contains(key)) return kPmixErrDuplicateKey;
    for (std::size_t j = 0; j < i; ++j)
      if (entries[j].key == key) return kPmixErrDuplicateKey;
    added += key.size() + entries[i].value.size();
  }
  if (bytes_ + added > kMaxBytes) return kPmixErrOutOfResource;
  bytes_ += added;
  for (const auto& e : entries) names_[e.key] = Name{e.value, owner, first_read, e.bytes};
  // Waiting lookups in the order they came; one that takes a first-read name leaves it to
  // no later one.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (!all_present(it->second)) {
      ++it;
      continue;
    }
    released.push_back(take(it->first, it->second));
    it = waiting_.erase(it);
  }
  return kPmixSuccess;
}

bool NameDirectory::all_present(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(), [&](const auto& k) { return names_.contains(k); });
}

NameDirectory::Answer NameDirectory::take(uint64_t ticket, const std::vector<std::string>& keys) {
  Answer a;
  a.ticket = ticket;
  for (const auto& k : keys) {
    auto it = names_.find(k);
    if (it == names_.end()) continue;
    a.found.push_back({k, it->second.value, it->second.owner, it->second.bytes});
    if (it->second.first_read) {
      bytes_ -= k.size() + it->second.value.size();
      names_.erase(it);
    }
  }
  if (a.found.empty())
    a.status = kPmixErrNotFound;
  else if (a.found.size() < keys.size())
    a.status = kPmixErrPartialSuccess;
  return a;
}

std::optional<NameDirectory::Answer> NameDirectory::lookup(uint64_t ticket,
                                                           const std::vector<std::string>& keys,
                                                           bool wait) {
  if (keys.empty()) return Answer{ticket, kPmixErrBadParam, {}};
  if (!wait || all_present(keys)) return take(ticket, keys);
  if (waiting_.size() >= kMaxWaiting) return Answer{ticket, kPmixErrOutOfResource, {}};
  waiting_[ticket] = keys;
  return std::nullopt;
}

int32_t NameDirectory::unpublish(const ProcId& owner, const std::vector<std::string>& keys) {
  int removed = 0;
  for (auto it = names_.begin(); it != names_.end();) {
    const bool asked = keys.empty() || std::find(keys.begin(), keys.end(), it->first) != keys.end();
    if (asked && it->second.owner == owner) {
      bytes_ -= it->first.size() + it->second.value.size();
      it = names_.erase(it);
      ++removed;
    } else {
      ++it;
    }
  }
  return removed > 0 ? kPmixSuccess : kPmixErrNotFound;
}

bool NameDirectory::drop(uint64_t ticket) { return waiting_.erase(ticket) > 0; }

}  // namespace ferry
