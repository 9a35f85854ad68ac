// --sync's trees read on a thread of their own, while the hosts are reached.
#include "ferry/sync/tree_reader.hpp"

#include "ferry/sync/tree_watch.hpp"

namespace ferry {

Status check_sync_request(const SyncRequest& request) {
  for (const SyncRequest::Part& p : request.parts)
    if (Status ok = p.tree ? check_tree_source(*p.tree) : check_single_files(p.files, p.option);
        !ok)
      return ok;
  return {};
}

Result<SyncTree> read_sync_request(const SyncRequest& request) {
  const SyncRules& rules = request.rules;
  std::vector<SyncTree> trees;
  uint64_t total = 0;
  for (const SyncRequest::Part& p : request.parts) {
    auto tree = p.tree ? scan_tree_watched(*p.tree, rules) : scan_files(p.files, p.option);
    if (!tree) return tree.error();
    total += tree->bytes;
    trees.push_back(std::move(*tree));
  }
  if (rules.max_bytes > 0 && total > rules.max_bytes)
    return make_error("--sync: " + bytes_text(total) + " in all, over --sync-max " +
                      bytes_text(rules.max_bytes));
  SyncTree all = merge_trees(std::move(trees));
  // A tree taken from a snapshot (scan_tree_watched()) comes with its digest.
  if (all.digest.empty())
    if (auto digest = tree_digest(all.entries())) all.digest = *digest;
  return all;
}

TreeReader::TreeReader(SyncRequest request, Done done)
    : thread_([this, request = std::move(request), done = std::move(done)]() mutable {
        request.rules.stop = &stop_;
        done(read_sync_request(request));
      }) {}

TreeReader::~TreeReader() {
  stop_ = true;
  thread_.join();
}

}  // namespace ferry
