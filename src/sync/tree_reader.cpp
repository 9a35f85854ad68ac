// --sync's trees read on a thread of their own, while the hosts are reached.
#include "ferry/sync/tree_reader.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <set>

namespace ferry {

Status check_sync_request(const SyncRequest& request) {
  for (const SyncRequest::Part& p : request.parts) {
    struct stat st {};
    if (p.tree) {
      if (::stat(p.tree->source.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        return make_error("--sync " + p.tree->source + ": not a directory");
      continue;
    }
    std::set<std::string> names;
    for (const std::string& f : p.files) {
      if (::stat(f.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return make_error(p.option + " " + f + ": not a file");
      if (!names.insert(std::filesystem::path(f).filename().string()).second)
        return make_error(p.option + ": two files named " +
                          std::filesystem::path(f).filename().string());
    }
  }
  return {};
}

Result<SyncTree> read_sync_request(const SyncRequest& request, const std::atomic<bool>* stop) {
  SyncRules rules = request.rules;
  rules.stop = stop;
  std::vector<SyncTree> trees;
  uint64_t total = 0;
  for (const SyncRequest::Part& p : request.parts) {
    auto tree = p.tree ? scan_tree(*p.tree, rules) : scan_files(p.files, p.option);
    if (!tree) return tree.error();
    total += tree->bytes;
    trees.push_back(std::move(*tree));
  }
  if (rules.max_bytes > 0 && total > rules.max_bytes)
    return make_error("--sync: " + bytes_text(total) + " in all, over --sync-max " +
                      bytes_text(rules.max_bytes));
  SyncTree all = merge_trees(std::move(trees));
  auto digest = tree_digest(all.entries);
  if (digest) all.digest = *digest;
  return all;
}

TreeReader::TreeReader(SyncRequest request, Done done)
    : thread_([this, request = std::move(request), done = std::move(done)] {
        done(read_sync_request(request, &stop_));
      }) {}

TreeReader::~TreeReader() {
  stop_ = true;
  thread_.join();
}

}  // namespace ferry
