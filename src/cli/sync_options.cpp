// --sync, --sync-exclude, --sync-max: the user's tree on every host before the ranks start
// (sync part, docs/sync.md).

#include <string>

#include "cli_parts.hpp"
#include "cli_text.hpp"
#include "ferry/sync/tree.hpp"

namespace ferry::cli_detail {

namespace {

constexpr uint64_t kDefaultSyncMax = uint64_t{1} << 30;

}  // namespace

void add_sync_options(CLI::App& app, RawCli& raw) {
  app.add_option("--sync", raw.sync,
                 "Put the tree DIR on every host before the ranks start, and start them in "
                 "the job's copy of it (DEST: where in the copy); only files a host's cache "
                 "lacks are sent. Repeatable")
      ->allow_extra_args(false)
      ->type_name("DIR[:DEST]")
      ->group("Job");
  app.add_option("--sync-exclude", raw.sync_exclude,
                 "Leave paths matching PATTERN out of --sync (as a .gitignore line; the tree's "
                 ".ferryignore, else its .gitignore, is read too). Repeatable")
      ->allow_extra_args(false)
      ->type_name("PATTERN")
      ->group("Job");
  app.add_option("--sync-max", raw.sync_max,
                 "Refuse to --sync trees whose files hold more than this (default 1G)")
      ->type_name("SIZE")
      ->group("Job");
}

Status finish_sync(JobOptions& job, RawCli& raw) {
  if (raw.sync.empty()) {
    if (!raw.sync_exclude.empty()) return make_error("--sync-exclude needs --sync DIR");
    if (raw.sync_max) return make_error("--sync-max needs --sync DIR");
    return {};
  }
  SyncRules rules;
  rules.excludes = raw.sync_exclude;
  rules.max_bytes = kDefaultSyncMax;
  if (raw.sync_max) {
    auto size = parse_size(*raw.sync_max);
    if (!size)
      return make_error("--sync-max: bad size '" + *raw.sync_max +
                        "' (expected bytes, or a number with K, M or G)");
    rules.max_bytes = *size;
  }
  if (job.elastic.on())
    return make_error(
        "--sync and Horovod's elastic mode: hosts that join later would not get the tree "
        "(not supported)");
  std::vector<SyncTree> trees;
  uint64_t total = 0;
  for (const std::string& text : raw.sync) {
    auto spec = parse_sync_spec(text);
    if (!spec) return spec.error();
    auto tree = scan_tree(*spec, rules);
    if (!tree) return tree.error();
    for (const std::string& line : tree->skipped) raw.warnings.push_back("--sync: " + line);
    total += tree->bytes;
    trees.push_back(std::move(*tree));
  }
  if (total > rules.max_bytes)
    return make_error("--sync: " + bytes_text(total) + " in all, over --sync-max " +
                      bytes_text(rules.max_bytes));
  job.sync = std::make_shared<const SyncTree>(merge_trees(std::move(trees)));
  return {};
}

}  // namespace ferry::cli_detail
