// --sync, --sync-exclude, --sync-max: the user's tree on every host before the ranks start
// (sync part, docs/sync.md).

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli_parts.hpp"
#include "cli_text.hpp"
#include "ferry/common/text.hpp"
#include "ferry/sync/file_cache.hpp"
#include "ferry/sync/tree.hpp"
#include "ferry/sync/tree_reader.hpp"

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
      ->group("Job");
  app.add_option("--sync-exclude", raw.sync_exclude,
                 "Leave paths matching PATTERN out of --sync (as a .gitignore line; the tree's "
                 ".ferryignore, else its .gitignore, is read too). Repeatable")
      ->allow_extra_args(false)
      ->group("Job");
  app.add_option("--sync-max", raw.sync_max,
                 "Refuse to --sync trees whose files hold more than this (default 1G)")
      ->group("Job");
}

// The program as this machine's PATH finds it (mpirun --preload-binary). Error: not found.
Result<std::string> program_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  for (const std::string& dir : split(path ? path : "", ':')) {
    const std::string p = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return make_error("--preload-binary: " + name + " is not on this machine's PATH");
}

// mpirun's --preload-files and --preload-binary, as parts of single files; the program then
// runs as the copy's ./NAME.
Status preload_parts(JobOptions& job, const RawCli& raw, SyncRequest& request) {
  if (!raw.preload_files.empty())
    request.parts.push_back({std::nullopt, split(raw.preload_files, ','), "--preload-files"});
  if (!raw.preload_binary) return {};
  if (!job.apps.empty())
    return make_error("--preload-binary with MPMD parts: give --sync DIR of their programs");
  auto program = program_path(job.command.front());
  if (!program) return program.error();
  request.parts.push_back({std::nullopt, {*program}, "--preload-binary"});
  job.command.front() = "./" + std::filesystem::path(*program).filename().string();
  return {};
}

void add_preload_options(CLI::App& app, RawCli& raw) {
  app.add_flag("-s,--preload-binary", raw.preload_binary,
               "Send the program to every host (as --sync): the ranks run the copy, in the "
               "job's own directory there")
      ->group("Start");
  app.add_option("--preload-files", raw.preload_files,
                 "Send these files (A,B,...) to every host (as --sync), into the ranks' "
                 "directory there")
      ->group("Start");
}

Status finish_sync(JobOptions& job, const RawCli& raw) {
  if (raw.sync.empty() && raw.preload_files.empty() && !raw.preload_binary) {
    if (!raw.sync_exclude.empty()) return make_error("--sync-exclude needs --sync DIR");
    if (raw.sync_max) return make_error("--sync-max needs --sync DIR");
    return {};
  }
  SyncRules rules;
  rules.excludes = raw.sync_exclude;
  rules.max_bytes = kDefaultSyncMax;
  rules.hash_index_dir = FileCache::default_base() + "/hashes";
  if (raw.sync_max) {
    auto size = parse_size(*raw.sync_max);
    if (!size)
      return make_error("--sync-max: bad size '" + *raw.sync_max +
                        "' (expected bytes, or a number with K, M or G)");
    rules.max_bytes = *size;
  }
  SyncRequest request;
  request.rules = rules;
  if (Status st = preload_parts(job, raw, request); !st) return st;
  for (const std::string& text : raw.sync) {
    auto spec = parse_sync_spec(text);
    if (!spec) return spec.error();
    request.parts.push_back({*spec, {}, ""});
  }
  // What needs no walk is refused here, before any host is reached; the rest is read while
  // the hosts are (TreeReader).
  if (Status st = check_sync_request(request); !st) return st;
  job.sync_request = std::make_shared<const SyncRequest>(std::move(request));
  return {};
}

}  // namespace ferry::cli_detail
