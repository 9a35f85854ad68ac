// MPMD lines in the launchers' words: `A : -np 4 B`, mpirun --app FILE, mpiexec -configfile
// FILE, a job file's [[apps]]; each part's hosts, variables and directory resolved once the
// job's hosts are known.

#include <cstdlib>
#include <filesystem>

#include "cli_parts.hpp"
#include "ferry/plan/environment.hpp"

namespace ferry::cli_detail {
namespace {

const char* env_lookup(const char* name) { return std::getenv(name); }

// The job's host that a part's -H entry names: the same name, and the same user and port
// where the entry gives them. hosts.size() when none.
size_t find_host(const HostList& hosts, const HostEntry& e) {
  for (size_t i = 0; i < hosts.size(); ++i) {
    const HostEntry& h = hosts[i];
    if (h.name != e.name) continue;
    if (!e.user.empty() && h.user != e.user) continue;
    if (e.port > 0 && h.port != e.port) continue;
    return i;
  }
  return hosts.size();
}

}  // namespace

void add_mpmd_options(CLI::App& app, RawCli& raw) {
  app.add_option("--app", raw.app_file,
                 "MPMD appfile: one part a line, '-np N [-H hosts] [-x VAR] PROGRAM ARGS'")
      ->group("Job");
  app.add_option("--configfile", raw.parts_file,
                 "MPMD parts, one a line: '-n N [-hosts H] [-env K V] PROGRAM ARGS'")
      ->allow_extra_args(false)
      ->group("MPICH (hydra)");
}

Result<std::vector<AppPart>> take_mpmd_parts(FrontendConfig& cfg, const RawCli& raw, bool literal,
                                             const JobFileExtras& extras, bool& from_file) {
  JobOptions& job = cfg.job;
  from_file = false;
  const std::string& file = !raw.app_file.empty() ? raw.app_file : raw.parts_file;
  const char* flag = !raw.app_file.empty() ? "--app" : "-configfile";
  if (!raw.app_file.empty() && !raw.parts_file.empty())
    return make_error("--app and -configfile both name the parts: give one");
  if (!file.empty()) {
    if (!job.command.empty())
      return make_error(std::string(flag) + " " + file +
                        ": the file names the programs; give no command after the options");
    if (job.np > 0)
      return make_error(std::string(flag) + " " + file +
                        ": -np goes on each line of the file, not before it");
    auto parts = read_app_file(file);
    if (!parts) return make_error(std::string(flag) + " " + parts.error().message);
    job.command = parts->front().command;
    from_file = true;
    return parts;
  }
  if (job.command.empty() && !extras.apps.empty()) {  // the job file's [[apps]]
    job.command = extras.apps.front().command;
    from_file = true;
    return extras.apps;
  }
  if (literal || !has_part_separator(job.command)) return std::vector<AppPart>{};
  if (raw.who == Personality::kHorovodrun)
    return make_error(
        "':' in the command: horovodrun runs one program on every rank (no MPMD parts); "
        "use ferryrun or mpirun for 'A : B', or put the command after -- for a literal ':'");
  auto parts = split_app_line(job.command);
  if (!parts) return parts.error();
  job.command = parts->front().command;
  return parts;
}

Status finish_mpmd(JobOptions& job, RawCli& raw, const std::vector<AppPart>& parts,
                   int default_slots, bool from_file) {
  if (parts.empty()) return {};
  if (job.elastic.on()) return make_error("MPMD parts do not combine with Horovod's elastic mode");
  if (job.min_hosts > 0)
    return make_error("--min-hosts " + std::to_string(job.min_hosts) +
                      ": an MPMD job is not shrunk to fewer hosts (each part is placed on "
                      "its hosts); --max-restarts restarts it whole");
  const bool default_host = job.hosts.size() == 1 && job.hosts.front().origin == "default";
  bool parts_name_hosts = false;
  for (const auto& p : parts) parts_name_hosts = parts_name_hosts || !p.hosts.empty();
  if (default_host && parts_name_hosts) job.hosts.clear();  // the parts' hosts are the job's

  std::vector<AppSpec> apps;
  int total = 0;
  bool every_np = true;
  for (size_t k = 0; k < parts.size(); ++k) {
    const AppPart& part = parts[k];
    AppSpec app;
    app.command = part.command;
    app.where = part.where;
    // On the command line the first part's options are the job's (read before): its -np is
    // the part's count, its -H, -x and --wdir everyone's.
    app.np = k == 0 && !from_file ? job.np : part.np;
    app.per_host = part.per_host;
    for (const auto& text : part.hosts) {
      auto listed = parse_host_option(text, default_slots);
      if (!listed) return make_error(part.where + ": " + listed.error().message);
      for (HostEntry& e : *listed) {
        size_t at = find_host(job.hosts, e);
        if (at == job.hosts.size()) {
          e.origin = part.where + " -H";
          job.hosts.push_back(e);
        } else if (e.slots > job.hosts[at].slots) {
          job.hosts[at].slots = e.slots;  // a host named by several parts: the most slots given
        }
        if (std::find(app.hosts.begin(), app.hosts.end(), at) == app.hosts.end())
          app.hosts.push_back(at);
      }
    }
    auto ex = resolve_exports(part.exports, &env_lookup, raw.warnings);
    if (!ex) return make_error(part.where + ": " + ex.error().message);
    app.exports = std::move(*ex);
    if (!part.wdir.empty()) {
      std::filesystem::path dir(part.wdir);
      // A relative directory is the job's directory's (its --wdir, else the current one).
      if (dir.is_relative())
        dir = std::filesystem::path(job.wdir.empty() ? std::filesystem::current_path().string()
                                                     : job.wdir) /
              dir;
      app.wdir = dir.lexically_normal().string();
    }
    if (app.np <= 0) every_np = false;
    total += std::max(app.np, 0);
    apps.push_back(std::move(app));
  }
  if (default_host && !parts_name_hosts) {
    // No host given: this machine, with a slot for each rank of every part.
    if (!every_np)
      for (const auto& a : apps)
        if (a.np <= 0)
          return make_error(a.where + " (" + a.command.front() +
                            "): give it -np N (no hosts were given, so there are no slots to "
                            "fill)");
    job.hosts.front().slots = total;
  }
  job.command = apps.front().command;
  job.apps = std::move(apps);
  raw.notes.push_back("MPMD job of " + std::to_string(job.apps.size()) + " parts");
  return {};
}

}  // namespace ferry::cli_detail

namespace ferry::cli_detail {

Status finish_rank_file(JobOptions& job, RawCli& raw) {
  if (raw.rankfile.empty()) return {};
  const std::string flag = "--rankfile " + raw.rankfile;
  const std::pair<bool, const char*> conflicts[] = {
      {!job.apps.empty(), "MPMD parts"},
      {job.elastic.on(), "Horovod's elastic mode"},
      {job.min_hosts > 0, "--min-hosts (a rank file's hosts are all needed)"},
      {raw.per_node > 0 || job.placement.per_host > 0, "-N"},
      {!raw.map_by.empty() || !raw.map_aliases.empty(), "--map-by"},
      {!raw.rank_by.empty(), "--rank-by"},
      {job.binding.cpus_per_rank > 0, "--cpus-per-rank (the file gives each rank's cores)"}};
  for (const auto& [used, what] : conflicts)
    if (used)
      return make_error(flag + ": the file places every rank; it does not combine with " + what);
  auto file = read_rank_file(raw.rankfile);
  if (!file) return file.error();
  const bool default_host = job.hosts.size() == 1 && job.hosts.front().origin == "default";
  if (default_host) {
    // No hosts given: the file's are the job's (this machine for a file of +nN only).
    HostList named = rank_file_hosts(*file);
    if (!named.empty())
      job.hosts = std::move(named);
    else
      job.hosts.front().slots = static_cast<int>(file->entries.size());
  }
  auto placed = place_by_rank_file(*file, job.hosts, job.np, job.oversubscribe);
  if (!placed) return placed.error();
  job.np = placed->world_size;
  raw.notes.push_back(flag + ": " + std::to_string(job.np) + " ranks on " +
                      std::to_string(placed->hosts.size()) + " host(s)");
  job.rank_file = std::move(*file);
  return {};
}

}  // namespace ferry::cli_detail
