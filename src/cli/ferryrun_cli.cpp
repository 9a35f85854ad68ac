#include "ferry/cli/ferryrun_cli.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "ferry/plan/environment.hpp"

namespace ferry {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
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

}  // namespace

std::vector<std::string> normalize_single_dash(const std::vector<std::string>& args,
                                               const std::vector<std::string>& long_names,
                                               const std::vector<std::string>& takes_value) {
  std::vector<std::string> out;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--" || a.empty() || a[0] != '-') break;  // the command starts here
    std::string name = a.substr(0, a.find('='));
    bool has_eq = name.size() != a.size();
    if (name.size() > 2 && name[1] != '-' && contains(long_names, name.substr(1))) {
      name = "-" + name;
      a = "-" + a;
    }
    out.push_back(a);
    bool value = contains(takes_value, name);
    if (value && !has_eq && name.rfind("--", 0) == 0 && i + 1 < args.size()) {
      out.push_back(args[++i]);
    } else if (value && !has_eq && name.size() == 2 && i + 1 < args.size()) {
      out.push_back(args[++i]);  // -H a:2 style short option with a separate value
    }
  }
  for (; i < args.size(); ++i) out.push_back(args[i]);
  return out;
}

ParseOutcome parse_ferryrun_args(const std::vector<std::string>& args_in) {
  FrontendConfig cfg;
  JobOptions& job = cfg.job;
  CLI::App app{
      "ferryrun: start a job of N ranks over hosts reached by SSH, like mpirun/horovodrun.\n"
      "  ferryrun -np 8 -H node1:4,node2:4 -p 2222 python train.py\n"
      "Hosts default to this machine (no SSH). Each rank gets RANK, LOCAL_RANK, WORLD_SIZE,\n"
      "MASTER_ADDR/PORT and the Horovod and Open MPI variables; output lines are tagged\n"
      "[rank]<stdout>: like horovodrun.",
      "ferryrun"};
  app.prefix_command();
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.set_version_flag("-V,--version", std::string("ferryrun ") + FERRY_VERSION);

  std::vector<std::string> host_specs, hostfiles, exports;
  std::string tag = "horovod";
  bool stdin_none = false;
  int np = 0;
  app.add_option("-n,--np", np, "Number of ranks (default: one per slot)")
      ->check(CLI::PositiveNumber)->group("Job");
  app.add_option("-H,--host", host_specs, "Hosts as host[:slots][,host[:slots]...]")
      ->allow_extra_args(false)->group("Hosts");
  app.add_option("--hostfile,--machinefile", hostfiles,
                 "Hostfile with lines 'host slots=N [port=P user=U ferryd=PATH]'")
      ->allow_extra_args(false)->group("Hosts");
  app.add_flag("--oversubscribe", job.oversubscribe,
               "Allow more ranks than slots on a host")->group("Job");
  app.add_option("-x", exports, "Export VAR (from this environment) or VAR=value to ranks")
      ->allow_extra_args(false)->group("Job");
  app.add_option("--wdir", job.wdir, "Working directory of the ranks (default: current)")
      ->group("Job");
  app.add_option("--kill-grace", job.kill_grace_s,
                 "Seconds between SIGTERM and SIGKILL when a job is aborted (default 5)")
      ->check(CLI::NonNegativeNumber)->group("Job");
  app.add_flag("--stdin-none", stdin_none, "Give every rank /dev/null as stdin "
               "(default: ferryrun's stdin goes to rank 0)")->group("Job");
  app.add_option("--start-timeout", job.start_timeout_s,
                 "Seconds to connect to every host and start ferryd (default 30)")
      ->check(CLI::PositiveNumber)->group("Start");
  app.add_option("--ferryd", job.ferryd_path,
                 "Path of ferryd on the hosts (default: beside this ferryrun)")->group("Start");
  app.add_option("-p,--ssh-port", cfg.ssh.port, "SSH port for hosts that name none")
      ->check(CLI::Range(1, 65535))->group("SSH");
  app.add_option("-i,--ssh-identity-file", cfg.ssh.identity_file, "SSH private key")
      ->group("SSH");
  app.add_option("-l,--ssh-user", cfg.ssh.user, "SSH login user for hosts that name none")
      ->group("SSH");
  app.add_option("--ssh-config", cfg.ssh.config_file,
                 "ssh_config file to read instead of ~/.ssh/config")->group("SSH");
  app.add_flag("--ssh-accept-new", cfg.ssh.accept_new,
               "Add unknown host keys to known_hosts (changed keys are still refused)")
      ->group("SSH");
  app.add_option("--heartbeat", cfg.ssh.heartbeat_s,
                 "Seconds between SSH keepalives; a host silent for 3 is lost (default off)")
      ->check(CLI::NonNegativeNumber)->group("SSH");
  app.add_option("--tag-style", tag, "Output tags: horovod ([r]<stdout>:), openmpi "
                 "([1,r]<stdout>:), mpich ([r] ) or none")
      ->check(CLI::IsMember({"horovod", "openmpi", "mpich", "none"}))->group("Output");
  app.add_flag("--timestamp-output,--prefix-output-with-timestamp", cfg.output.timestamps,
               "Prefix each line with the time")->group("Output");
  app.add_flag("--merge-stderr-to-stdout", cfg.output.merge_stderr,
               "Print ranks' stderr lines on stdout")->group("Output");
  app.add_option("--output-filename", cfg.output.output_dir,
                 "Also write each rank's output to DIR/rank.N/stdout|stderr")->group("Output");
  app.add_flag("--verbose", job.verbose, "Say what ferryrun does and how long it takes");
  app.footer(
      "Everything from the first word that is not an option is the command (or use --).\n"
      "Exit status: 0, the first failing rank's status (128+signal if killed), 255 if a\n"
      "host was lost, 1 if the job could not start, 2 for bad input.");

  // Collect the option names CLI11 knows, to accept mpirun's single-dash spellings.
  std::vector<std::string> long_names, takes_value;
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) {
      long_names.push_back(l);
      if (o->get_expected_min() > 0) takes_value.push_back("--" + l);
    }
    for (const auto& s : o->get_snames())
      if (o->get_expected_min() > 0) takes_value.push_back("-" + s);
  }
  std::vector<std::string> args(args_in.begin() + (args_in.empty() ? 0 : 1), args_in.end());
  args = normalize_single_dash(args, long_names, takes_value);
  auto sep = std::find(args.begin(), args.end(), "--");
  const bool explicit_sep = sep != args.end() && sep + 1 != args.end() && (sep + 1)->size() &&
                            (*(sep + 1))[0] == '-';
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      app.exit(e);
      return {std::nullopt, 0};
    }
    std::cerr << "ferryrun: " << e.what() << " (see ferryrun --help)\n";
    return {std::nullopt, 2};
  }
  job.np = np;
  job.command = app.remaining();
  if (!job.command.empty() && job.command.front() == "--") job.command.erase(job.command.begin());
  if (job.command.empty()) {
    std::cerr << "ferryrun: no command given (see ferryrun --help)\n";
    return {std::nullopt, 2};
  }
  // CLI11 starts the command at an unknown option; a typo must not become the command.
  if (!job.command.front().empty() && job.command.front()[0] == '-' && !explicit_sep) {
    std::cerr << "ferryrun: unknown option '" << job.command.front()
              << "' (see ferryrun --help; put the command after -- if it starts with '-')\n";
    return {std::nullopt, 2};
  }
  if (tag == "openmpi") cfg.output.tag = TagStyle::kOpenMpi;
  else if (tag == "mpich") cfg.output.tag = TagStyle::kMpich;
  else if (tag == "none") cfg.output.tag = TagStyle::kNone;
  else cfg.output.tag = TagStyle::kHorovod;

  for (const auto& spec : host_specs) {
    auto hl = parse_host_spec(spec);
    if (!hl) {
      std::cerr << "ferryrun: " << hl.error().message << "\n";
      return {std::nullopt, 2};
    }
    merge_hosts(job.hosts, *hl);
  }
  for (const auto& f : hostfiles) {
    auto hl = read_hostfile(f);
    if (!hl) {
      std::cerr << "ferryrun: " << hl.error().message << "\n";
      return {std::nullopt, 2};
    }
    merge_hosts(job.hosts, *hl);
  }
  if (job.hosts.empty()) {
    // The embedded default: this machine, with as many slots as ranks asked for (as
    // horovodrun does), or one per core.
    HostEntry local;
    local.name = "localhost";
    local.slots = np > 0 ? np : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    local.origin = "default";
    job.hosts.push_back(local);
  }
  std::vector<std::string> warnings;
  auto ex = resolve_exports(exports, &env_lookup, warnings);
  if (!ex) {
    std::cerr << "ferryrun: " << ex.error().message << "\n";
    return {std::nullopt, 2};
  }
  for (const auto& w : warnings) std::cerr << "ferryrun: warning: " << w << "\n";
  job.exports = std::move(ex.value());
  job.wdir_explicit = !job.wdir.empty();
  if (job.wdir.empty()) job.wdir = current_dir();
  if (job.ferryd_path.empty()) job.ferryd_path = self_dir() + "/ferryd";
  job.stdin_rank = stdin_none ? -1 : 0;
  return {std::move(cfg), 0};
}

}  // namespace ferry
