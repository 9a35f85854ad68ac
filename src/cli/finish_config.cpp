// After CLI11: the command, where the hosts come from (command line, job file, Slurm, this
// machine), what the ranks get exported, and the words that need the whole line.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>

#include "cli_parts.hpp"
#include "cli_text.hpp"
#include "ferry/cli/binding_flags.hpp"
#include "ferry/common/read_text_file.hpp"
#include "ferry/hosts/slurm.hpp"
#include "ferry/plan/environment.hpp"

namespace ferry::cli_detail {
namespace {

// A file written after the job (--report, --trace): its folder must be there and writable,
// and the name must not be a folder, so that a long job does not end in "cannot write".
Status check_output_file(const char* flag, const std::string& file) {
  if (file.empty()) return {};
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return make_error(std::string(flag) + " " + file + ": is a folder; give a file name");
  const size_t slash = file.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : file.substr(0, slash));
  if (::access(dir.c_str(), W_OK) != 0)
    return make_error(std::string(flag) + " " + file + ": cannot write into " + dir + ": " +
                      std::strerror(errno));
  return {};
}

std::string current_dir() {
  std::vector<char> buf(4096);
  if (::getcwd(buf.data(), buf.size())) return buf.data();
  return "";
}

std::string self_dir() {
  std::vector<char> buf(4096);
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return "";
  std::string p(buf.data(), static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

const char* env_lookup(const char* name) { return std::getenv(name); }

Status apply_words(FrontendConfig& cfg, RawCli& raw) {
  JobOptions& job = cfg.job;
  if (!raw.map_by.empty())
    if (Status st = apply_map_by(raw.map_by, job); !st)
      return make_error("--map-by: " + st.error().message);
  if (!raw.bind_to.empty())
    if (Status st = apply_bind_to(raw.bind_to, job.binding); !st)
      return make_error("--bind-to: " + st.error().message);
  if (!raw.rank_by.empty())
    if (Status st = apply_rank_by(raw.rank_by, job.placement); !st)
      return make_error("--rank-by: " + st.error().message);
  if (raw.per_node > 0) job.placement.per_host = raw.per_node;
  if (raw.no_oversubscribe) job.oversubscribe = false;  // over --map-by's OVERSUBSCRIBE
  if (!raw.devices.empty()) {
    auto d = parse_device_list(raw.devices);
    if (!d) return make_error("--devices: " + d.error().message);
    job.binding.devices = *d;
    // The command line wins over the job file: its list is every host's.
    if (!job.host_devices.empty()) {
      job.host_devices.clear();
      raw.notes.emplace_back("--devices replaces the job file's per-host devices");
    }
  }
  if (!raw.tag.empty()) {
    if (raw.tag == "openmpi")
      cfg.output.tag = TagStyle::kOpenMpi;
    else if (raw.tag == "mpich")
      cfg.output.tag = TagStyle::kMpich;
    else if (raw.tag == "none")
      cfg.output.tag = TagStyle::kNone;
    else if (raw.tag == "host")
      cfg.output.tag = TagStyle::kHost;
    else
      cfg.output.tag = TagStyle::kHorovod;
  }
  if (raw.tag_output) cfg.output.tag = TagStyle::kOpenMpi;
  if (raw.layout == "openmpi") cfg.output.layout = FileLayout::kOpenMpi;
  if (raw.layout == "horovod") cfg.output.layout = FileLayout::kHorovod;
  if (raw.stdin_none && !raw.stdin_spec.empty() && raw.stdin_spec != "none")
    return make_error("--stdin-none and --stdin " + raw.stdin_spec +
                      " contradict each other: give one");
  if (raw.stdin_none) job.stdin_rank = -1;
  if (!raw.stdin_spec.empty()) {
    const std::string& s = raw.stdin_spec;
    if (s == "none") {
      job.stdin_rank = -1;
    } else if (s == "all") {
      return make_error(
          "--stdin all: ferry forwards stdin to one rank only; give a rank "
          "(--stdin 0) or none");
    } else if (auto r = parse_int(s, 0, 999'999)) {
      job.stdin_rank = static_cast<int>(*r);
    } else {
      return make_error("--stdin: bad value '" + s + "' (expected a rank number or none)");
    }
  }
  if (raw.no_preflight) job.preflight = false;
  if (job.stall_abort && job.stall_timeout_s == 0)
    return make_error("--stall-abort needs --stall-timeout S (how long a silence is a stall)");
  for (const auto& [flag, file] :
       {std::pair{"--report", &job.report_file}, std::pair{"--trace", &job.trace_file}})
    if (auto s = check_output_file(flag, *file); !s) return s;
  return {};
}

Status resolve_hosts(JobOptions& job, RawCli& raw, const JobFileExtras& file) {
  const int default_slots = raw.default_slots > 0 ? raw.default_slots : file.default_slots;
  if (!job.elastic.discovery_script.empty()) {  // found when the job starts (no -H with it)
    if (!job.hosts.empty())
      raw.notes.emplace_back("the job file's hosts are replaced by the discovery script's");
    job.hosts.clear();
    job.host_devices.clear();
    return {};
  }
  if (!raw.host_options.empty() || !raw.hostfiles.empty()) {
    HostList hosts;  // the command line's hosts replace the job file's
    for (const auto& text : raw.host_options) {
      auto hl = parse_host_option(text, default_slots);
      if (!hl) return hl.error();
      merge_hosts(hosts, *hl);
    }
    for (const auto& f : raw.hostfiles) {
      auto hl = read_hostfile(f, default_slots);
      if (!hl) return hl.error();
      merge_hosts(hosts, *hl);
    }
    if (!job.hosts.empty())
      raw.notes.emplace_back("the job file's hosts are replaced by the command line's");
    job.hosts = std::move(hosts);
    job.host_devices.clear();
    return {};
  }
  for (const auto& f : file.hostfiles) {
    auto hl = read_hostfile(f, default_slots);
    if (!hl) return hl.error();
    merge_hosts(job.hosts, *hl);
  }
  if (!job.hosts.empty()) return {};
  if (std::getenv("SLURM_JOB_NODELIST") || std::getenv("SLURM_NODELIST")) {
    std::map<std::string, std::string> env;
    for (const char* k :
         {"SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE"})
      if (const char* v = std::getenv(k)) env[k] = v;
    auto hl = hosts_from_slurm(env);
    if (!hl) return hl.error();
    job.hosts = std::move(*hl);
    raw.notes.push_back("hosts from the Slurm allocation: " + std::to_string(job.hosts.size()) +
                        " nodes");
    return {};
  }
  // This machine, with as many slots as ranks asked for (as horovodrun does), or one per
  // core.
  HostEntry local;
  local.name = "localhost";
  local.slots = job.np > 0 ? job.np
                : job.placement.per_host > 0
                    ? job.placement.per_host
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  local.origin = "default";
  job.hosts.push_back(local);
  return {};
}

// --nnodes, --min-hosts and --min-np/--max-np against the hosts the job has.
Status check_fault_tolerance(JobOptions& job, const RawCli& raw) {
  if (job.elastic.on() && job.max_restarts > 0)
    return make_error("--max-restarts " + std::to_string(job.max_restarts) +
                      ": Horovod's elastic mode (--min-np, --host-discovery-script) recovers "
                      "from failures itself; whole-job restarts do not combine with it");
  if (job.elastic.on() && job.min_hosts > 0)
    return make_error("--min-hosts " + std::to_string(job.min_hosts) +
                      ": Horovod's elastic mode (--min-np, --host-discovery-script) decides "
                      "itself which hosts go on; give --min-np instead");
  const int hosts = static_cast<int>(job.hosts.size());
  if (!raw.nnodes.empty()) {
    const std::string& v = raw.nnodes;
    const size_t colon = v.find(':');
    auto lo = parse_int(v.substr(0, colon), 1, 1'000'000);
    auto hi = colon == std::string::npos ? lo : parse_int(v.substr(colon + 1), 1, 1'000'000);
    if (!lo || !hi || *lo > *hi)
      return make_error("--nnodes: bad value '" + v + "' (expected N or MIN:MAX, MIN <= MAX)");
    if (hosts < *lo || hosts > *hi)
      return make_error("--nnodes " + v + ": the job has " + std::to_string(hosts) + " host(s)");
    if (*lo < hosts) job.min_hosts = static_cast<int>(*lo);
  }
  if (job.min_hosts > hosts)
    return make_error("--min-hosts " + std::to_string(job.min_hosts) + ": the job has only " +
                      std::to_string(hosts) + " host(s)");
  if (raw.max_np > 0 && job.np > raw.max_np)
    return make_error("--max-np " + std::to_string(raw.max_np) + " is below -np " +
                      std::to_string(job.np));
  if (job.min_ranks > 0 && job.np > 0 && job.min_ranks > job.np)
    return make_error("--min-np " + std::to_string(job.min_ranks) + " is above -np " +
                      std::to_string(job.np));
  return {};
}

// --launcher against where ferryrun runs: auto picks Slurm inside an allocation whose nodes are
// the job's hosts (hydra's `-launcher slurm` and Open MPI's plm_slurm do the same).
Status choose_launcher(FrontendConfig& cfg, const RawCli& raw) {
  std::string l = raw.launcher;
  if (l == "fork") l = "local";  // hydra's word
  if (l == "rsh") l = "ssh";
  if (l == "slurm") {
    if (!in_slurm_allocation())
      return make_error(
          "--launcher slurm: not inside a Slurm allocation (no SLURM_JOB_ID, or "
          "no srun on PATH)");
    cfg.launch = LaunchWith::kSlurm;
    cfg.launch_reason = "--launcher slurm";
  } else if (l == "ssh") {
    cfg.launch = LaunchWith::kSsh;
    cfg.launch_reason = "--launcher ssh";
  } else if (l == "local") {
    cfg.launch = LaunchWith::kLocal;
    cfg.launch_reason = "--launcher local";
  } else if (l == "auto") {
    cfg.launch_by_hosts = true;
    // Hosts a discovery script finds are known when the job starts: chosen then.
    if (!cfg.job.hosts.empty()) choose_launcher_by_hosts(cfg);
  } else {
    return make_error("--launcher: bad value '" + raw.launcher +
                      "' (expected auto, ssh, slurm or local)");
  }
  return {};
}

// Later entries win; each variable appears once, at its last position.
std::vector<std::string> last_wins(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (size_t i = items.size(); i-- > 0;) {
    const std::string& item = items[i];
    std::string name = item.substr(0, item.find('='));
    if (seen.insert(name).second) out.push_back(item);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

// An ssh_config libssh cannot use (a directory, binary data) would be skipped without a
// word: say it instead.
Status check_ssh_config(const std::string& path) {
  if (path.empty()) return {};
  auto text = read_text_file(path, std::size_t{1} << 20, "ssh_config");
  if (!text) return make_error("--ssh-config " + text.error().message);
  const bool binary = std::any_of(text->begin(), text->end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return (b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f;
  });
  if (binary)
    return make_error("--ssh-config " + path + ": not an ssh_config (it holds binary data)");
  return {};
}

// -x of a variable ferry sets itself for each rank (RANK, WORLD_SIZE, ...): said, since the
// exported value never reaches a rank.
void warn_overridden(RawCli& raw, const JobFileExtras& file) {
  std::vector<std::string> asked = file.exports;
  asked.insert(asked.end(), raw.exports.begin(), raw.exports.end());
  const auto names = overridden_exports(asked);
  if (names.empty()) return;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  raw.warnings.push_back("-x " + list + ": ferry sets " + (names.size() == 1 ? "it" : "these") +
                         " itself for every rank; the exported value is not used");
}

}  // namespace

Status personality_refusal(const RawCli& raw) {
  switch (raw.who) {
    case Personality::kHorovodrun:
      return horovodrun_refusal(raw);
    case Personality::kMpirun:
      return mpirun_refusal(raw);
    case Personality::kFerryrun:
      break;
  }
  return {};
}

Status finish_config(FrontendConfig& cfg, RawCli& raw, std::vector<std::string> remaining,
                     bool explicit_separator, const JobFileExtras& file) {
  JobOptions& job = cfg.job;
  const std::string help = " (see " + invocation(raw) + " --help)";
  if (!raw.compat.empty())
    return make_error("--compat must be the first argument: ferryrun --compat " + raw.compat +
                      " ...");
  if (Status st = personality_refusal(raw); !st) return st;
  if (!remaining.empty() && remaining.front() == "--") remaining.erase(remaining.begin());
  if (!remaining.empty()) {
    // CLI11 starts the command at an unknown option; a typo must not become the command.
    if (!explicit_separator && !remaining.front().empty() && remaining.front()[0] == '-')
      return make_error("unknown option '" + remaining.front() + "' (see " + invocation(raw) +
                        " --help; put the command after -- if it starts with '-')");
    job.command = std::move(remaining);
  }
  bool parts_from_file = false;
  auto parts = take_mpmd_parts(cfg, raw, explicit_separator, file, parts_from_file);
  if (!parts) return parts.error();
  if (job.command.empty() && job.check) job.command = {"true"};  // --check starts no rank
  if (job.command.empty()) return make_error("no command given" + help);
  if (job.command.front().empty()) return make_error("the command is an empty word" + help);

  std::vector<std::string> generated;
  if (raw.who == Personality::kHorovodrun) {
    auto g = finish_horovodrun(cfg, raw);
    if (!g) return g.error();
    generated = std::move(*g);
  } else if (raw.who == Personality::kMpirun) {
    if (Status st = finish_mpirun(cfg, raw); !st) return st;
  }
  if (Status st = apply_words(cfg, raw); !st) return st;
  if (Status st = resolve_hosts(job, raw, file); !st) return st;
  if (Status st = finish_mpmd(job, raw, *parts,
                              raw.default_slots > 0 ? raw.default_slots : file.default_slots,
                              parts_from_file);
      !st)
    return st;
  if (Status st = finish_rank_file(job, raw); !st) return st;
  if (Status st = check_fault_tolerance(job, raw); !st) return st;
  if (Status st = finish_fixed_elastic(job, raw); !st) return st;
  if (Status st = choose_launcher(cfg, raw); !st) return st;
  if (Status st = check_ssh_config(cfg.ssh.config_file); !st) return st;

  if (Status st = finish_console(cfg, raw); !st) return st;
  if (Status st = finish_session(cfg, raw); !st) return st;
  if (Status st = finish_sync(job, raw); !st) return st;
  auto items = export_items(raw, file, generated);
  if (!items) return items.error();
  auto ex = resolve_exports(*items, &env_lookup, raw.warnings);
  if (!ex) return ex.error();
  job.exports = last_wins(*ex);
  warn_overridden(raw, file);

  job.wdir_explicit = !job.wdir.empty();
  if (job.wdir.empty()) job.wdir = current_dir();
  if (!raw.ferryd.empty()) job.ferryd_path = raw.ferryd;
  if (job.ferryd_path.empty()) job.ferryd_path = self_dir() + "/ferryd";
  if (!raw.ship_ferryd.empty()) cfg.ship_ferryd = raw.ship_ferryd;
  if (!raw.ferryd_dir.empty()) cfg.ferryd_dir = raw.ferryd_dir;
  return {};
}

}  // namespace ferry::cli_detail

namespace ferry {

void choose_launcher_by_hosts(FrontendConfig& cfg) {
  if (in_slurm_allocation() && hosts_in_allocation(cfg.job.hosts)) {
    cfg.launch = LaunchWith::kSlurm;
    cfg.launch_reason = "inside Slurm job " + std::string(std::getenv("SLURM_JOB_ID")) +
                        ", every host is a node of the allocation";
  } else {
    cfg.launch = LaunchWith::kSsh;
    cfg.launch_reason = in_slurm_allocation() ? "some hosts are not in the Slurm allocation"
                                              : "not inside a Slurm allocation";
  }
}

}  // namespace ferry
