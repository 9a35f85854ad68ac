// parse_ferryrun_args: pick the personality, read the job file named by --config, let the
// command line override it, then finish the config (cli_parts.hpp has the pieces).

#include "ferry/cli/ferryrun_cli.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli_parts.hpp"
#include "cli_text.hpp"
#include "ferry/cli/job_file.hpp"
#include "ferry/common/build_info.hpp"
#include "ferry/common/printable.hpp"

namespace ferry {
namespace {

using cli_detail::RawCli;

// The text above the options. `name` is the launcher as the user knows it (mpiexec for a
// link named mpiexec).
std::string description(Personality who, const std::string& name) {
  switch (who) {
    case Personality::kHorovodrun:
      return "horovodrun (ferry): start a Horovod job of N ranks over hosts reached by SSH.\n"
             "  horovodrun -np 8 -H node1:4,node2:4 python train.py\n"
             "Ranks get Horovod's gloo variables and the launcher's environment; tunables\n"
             "become HOROVOD_* variables; output lines are tagged [rank]<stdout>:.\n"
             "Elastic mode (hvd.elastic scripts), as horovodrun: --host-discovery-script S,\n"
             "or --min-np N with -H/--hostfile (failing hosts leave, the others go on).";
    case Personality::kMpirun:
      return name + " (ferry): start N processes over hosts reached by SSH, Open MPI style\n" +
             "(MPICH's mpiexec flags too: -f, -hosts, -ppn, -genv, -l).\n" + "  " + name +
             " -np 8 -H node1:4,node2:4 -x NCCL_DEBUG ./app\n" +
             "Ranks get OMPI_COMM_WORLD_*, PyTorch and Horovod variables; output is untagged\n"
             "unless --tag-output. Only -x and -genv variables are exported. Open MPI flags that\n"
             "change nothing here are accepted (--verbose says so); those ferry cannot\n"
             "honour are refused with the reason (docs/compat.md).";
    case Personality::kFerryrun:
      break;
  }
  return "ferryrun: start a job of N ranks over hosts reached by SSH, like mpirun/horovodrun.\n"
         "  ferryrun -np 8 -H node1:4,node2:4 -p 2222 python train.py\n"
         "Hosts come from -H/--hostfile, a --config job file, a Slurm allocation, or default\n"
         "to this machine (no SSH). Each rank gets RANK, LOCAL_RANK, WORLD_SIZE,\n"
         "MASTER_ADDR/PORT and the Horovod and Open MPI variables; output lines are tagged\n"
         "[rank]<stdout>: like horovodrun.";
}

// What an option's value is, for --help and the errors ("N", "DIR", "{auto,ssh,...}"), by its
// first long name (its short one when it has none).
std::string value_word(const CLI::Option& opt) {
  const auto& longs = opt.get_lnames();
  const auto& shorts = opt.get_snames();
  const std::string name = !longs.empty() ? longs.front() : shorts.empty() ? "" : shorts.front();
  return cli_detail::value_placeholder(name, opt.get_type_name());
}

// --help as people read it: the usage line shows where the command goes, and a negated
// flag (horovodrun's --no-autotune) is not shown as "--no-autotune{false}", which reads
// like a default value.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string name) const override {
    return get_label("Usage") + ": " + name + " [" + get_label("OPTIONS") +
           "] [--] COMMAND [ARGS...]\n";
  }
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, positional);
    for (size_t at = name.find("{false}"); at != std::string::npos; at = name.find("{false}"))
      name.erase(at, 7);
    return name;
  }
  // What the value is ("--wdir DIR", "--mca NAME VALUE"), not its C++ type ("TEXT x 2").
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_type_size() == 0 || opt->get_type_name().empty() ||
        !opt->get_option_text().empty())
      return CLI::Formatter::make_option_opts(opt);
    std::string out = " " + value_word(*opt);
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
    if (!opt->get_envname().empty())
      out += " (" + get_label("Env") + ":" + opt->get_envname() + ")";
    return out;
  }
};

std::unique_ptr<CLI::App> make_app(FrontendConfig& cfg, RawCli& raw) {
  const std::string name = personality_of_program(raw.program) == raw.who
                               ? raw.program
                               : std::string(personality_name(raw.who));
  auto app = std::make_unique<CLI::App>(description(raw.who, name), cli_detail::invocation(raw));
  app->prefix_command();
  app->formatter(std::make_shared<HelpFormatter>());
  app->set_help_flag("-h,--help", "Print this help and exit");
  std::string version = "ferryrun " + version_text();
  if (raw.who != Personality::kFerryrun)
    version += std::string(" (") + personality_name(raw.who) + " personality)";
  app->set_version_flag(raw.who == Personality::kHorovodrun ? "-v,--version" : "-V,--version",
                        version);
  switch (raw.who) {
    case Personality::kHorovodrun:
      cli_detail::add_horovodrun_options(*app, cfg, raw);
      break;
    case Personality::kMpirun:
      cli_detail::add_mpirun_options(*app, cfg, raw);
      cli_detail::add_preload_options(*app, raw);  // --sync in mpirun's words
      break;
    case Personality::kFerryrun:
      cli_detail::add_ferryrun_options(*app, cfg, raw);
      break;
  }
  const std::string mpmd = raw.who == Personality::kHorovodrun
                               ? ""
                               : "Several programs in one job (MPMD): COMMAND : -np N [-H HOSTS] "
                                 "[-x VAR] COMMAND2 ...\n";
  app->footer("Everything from the first word that is not an option is the command (or use --).\n" +
              mpmd +
              "Single-dash long options work (-np 4, -hostfile F, -wdir D).\n"
              "Exit status: 0, the first failing rank's status (128+signal if killed), 255 if a\n"
              "host was lost, 124 if --timeout (or --stall-abort) ended the job, 1 if the job\n"
              "could not start, 2 for bad input.");
  return app;
}

// What each personality starts from, before the job file and the command line.
FrontendConfig personality_defaults(Personality who) {
  FrontendConfig cfg;
  if (who == Personality::kMpirun) {
    cfg.output.tag = TagStyle::kNone;
    cfg.output.layout = FileLayout::kOpenMpi;
  }
  if (who == Personality::kHorovodrun) {
    if (const char* t = std::getenv("HOROVOD_START_TIMEOUT"))
      if (auto s = cli_detail::parse_int(t, 1, 86400))
        cfg.job.start_timeout_s = static_cast<int>(*s);
  }
  return cfg;
}

// The value of --config among the options (before `end`); "" when absent.
std::string config_path(const std::vector<std::string>& args, size_t end) {
  std::string path;
  for (size_t i = 0; i < end; ++i) {
    if (args[i] == "--config" && i + 1 < end)
      path = args[++i];
    else if (args[i].starts_with("--config="))
      path = args[i].substr(9);
  }
  return path;
}

// Messages quote what the user gave (a hostfile's words, option values): bytes that are not
// printable are escaped, so a binary file or a control character cannot garble the terminal.
ParseOutcome fail(const RawCli& raw, const std::string& message) {
  std::cerr << raw.program << ": " << printable(message, 4096) << "\n";
  return {std::nullopt, 2};
}

// The option as the user wrote it: "-np" for --np, "-H" for --host, its first long name when
// none of its spellings is among `options` (the words before the command).
std::string spelling_used(const CLI::Option& opt, const std::vector<std::string>& options,
                          const RawCli& raw) {
  std::vector<std::string> names;
  for (const auto& s : opt.get_snames()) names.push_back("-" + s);
  for (const auto& l : opt.get_lnames()) names.push_back("--" + l);
  for (const auto& word : options)
    for (const auto& n : names)
      if (word == n || word.starts_with(n + "=")) return cli_detail::typed_as(raw, n);
  return opt.get_lnames().empty() ? opt.get_name() : "--" + opt.get_lnames().front();
}

// CLI11's words for a missing or unknown value ("--np: 1 required INT missing", "--launcher:
// foo not in {auto,ssh}", "At least 2 required but received 1") in ferry's: the option as
// typed and what its value is ("-np: needs a value (N)"). Other messages are kept.
std::string parse_error_text(const CLI::App& app, const std::string& what,
                             const std::vector<std::string>& options, const RawCli& raw) {
  const size_t colon = what.find(": ");
  if (colon == std::string::npos) return what;
  const CLI::Option* opt = app.get_option_no_throw(what.substr(0, colon));
  if (opt == nullptr) return what;
  const std::string rest = what.substr(colon + 2);
  const std::string flag = spelling_used(*opt, options, raw);
  const std::string value = value_word(*opt);
  if (rest.ends_with(" missing") || rest.starts_with("At least "))
    return flag + ": needs " + (opt->get_expected_min() > 1 ? "values" : "a value") + " (" + value +
           ")";
  if (const size_t at = rest.find(" not in {"); at != std::string::npos)
    return flag + ": '" + rest.substr(0, at) + "' is not one of " + value;
  return flag + ": " + rest;
}

// mpirun --display-allocation: the job's hosts and their slots, before anything starts.
void print_allocation(const std::string& program, const HostList& hosts) {
  int slots = 0;
  for (const auto& h : hosts) slots += h.slots;
  std::cerr << program << ": allocated hosts: " << hosts.size() << ", slots: " << slots << "\n";
  for (const auto& h : hosts) {
    std::cerr << "  " << printable(h.name, 256) << " slots=" << h.slots;
    if (h.max_slots > 0) std::cerr << " max_slots=" << h.max_slots;
    if (!h.user.empty()) std::cerr << " user=" << printable(h.user, 256);
    if (h.port > 0) std::cerr << " port=" << h.port;
    if (!h.origin.empty()) std::cerr << " (" << printable(h.origin, 256) << ")";
    std::cerr << "\n";
  }
}

}  // namespace

std::string cli_detail::invocation(const RawCli& raw) {
  if (personality_of_program(raw.program) == raw.who) return raw.program;
  return raw.program + " --compat " + personality_name(raw.who);
}

namespace {

// The command line as typed, on one line, for a detached job's record: the program's name,
// then each word made printable.
std::string command_line_of(const std::string& program, const std::vector<std::string>& args) {
  std::string line = program;
  for (size_t i = 1; i < args.size(); ++i) line += " " + printable(args[i], 256);
  return line;
}

}  // namespace

ParseOutcome parse_ferryrun_args(const std::vector<std::string>& args_in) {
  RawCli raw;
  const std::string argv0 = args_in.empty() ? "ferryrun" : args_in[0];
  raw.who = personality_of_program(argv0);
  raw.program = program_name(argv0);
  std::vector<std::string> args(args_in.begin() + (args_in.empty() ? 0 : 1), args_in.end());

  // ferryrun --compat NAME ...: the rest is NAME's command line.
  if (raw.who == Personality::kFerryrun && !args.empty() &&
      (args[0] == "--compat" || args[0].starts_with("--compat="))) {
    std::string name = args[0] == "--compat" ? (args.size() > 1 ? args[1] : "") : args[0].substr(9);
    const auto drop =
        static_cast<std::ptrdiff_t>(args[0] == "--compat" ? std::min<size_t>(2, args.size()) : 1);
    args.erase(args.begin(), args.begin() + drop);
    auto who = personality_named(name);
    if (!who)
      return fail(raw, "--compat: unknown launcher '" + name + "' (expected horovodrun or mpirun)");
    raw.who = *who;
  }

  // First pass: which words are options, where the command starts, --mca and --config.
  cli_detail::OptionTable table;
  {
    FrontendConfig scratch;
    RawCli scratch_raw = raw;
    table = cli_detail::option_table(*make_app(scratch, scratch_raw));
  }
  {
    std::vector<std::string> normalized = cli_detail::normalize(args, table);
    cli_detail::note_typed(args, normalized, raw);
    args = std::move(normalized);
  }
  size_t end = cli_detail::command_start(args, table);
  if (std::string w = cli_detail::first_flag_cluster(args, end, table); !w.empty())
    return fail(raw, "unknown option '" + w + "' (see " + cli_detail::invocation(raw) +
                         " --help; put the command after -- if it starts with '-')");
  if (raw.who == Personality::kMpirun)
    if (Status st = cli_detail::take_mca(args, end, raw); !st) return fail(raw, st.error().message);
  const bool explicit_sep = end < args.size() && args[end] == "--";

  FrontendConfig cfg = personality_defaults(raw.who);
  cli_detail::JobFileExtras extras;
  if (std::string path = config_path(args, end); !path.empty()) {
    auto file = read_job_file(path, cfg);
    if (!file) return fail(raw, file.error().message);
    cfg = std::move(file->config);
    extras.present = true;
    extras.hostfiles = std::move(file->hostfiles);
    extras.exports = std::move(file->exports);
    extras.default_slots = file->default_slots;
    extras.env_files = std::move(file->env_files);
    extras.env_all = file->env_all;
    extras.apps = std::move(file->apps);
  }

  // Second pass: the command line over the job file.
  auto app = make_app(cfg, raw);
  const std::vector<std::string> options(args.begin(),
                                         args.begin() + static_cast<std::ptrdiff_t>(end));
  std::reverse(args.begin(), args.end());
  try {
    app->parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      app->exit(e);
      return {std::nullopt, 0};
    }
    return fail(raw, parse_error_text(*app, e.what(), options, raw) + " (see " +
                         cli_detail::invocation(raw) + " --help)");
  }
  Status st = cli_detail::finish_config(cfg, raw, app->remaining(), explicit_sep, extras);
  for (const auto& w : raw.warnings)
    std::cerr << raw.program << ": warning: " << printable(w, 4096) << "\n";
  if (!st) return fail(raw, st.error().message);
  if (cfg.job.verbose)
    for (const auto& n : raw.notes) std::cerr << raw.program << ": note: " << n << "\n";
  if (raw.display_allocation) print_allocation(raw.program, cfg.job.hosts);
  cfg.program = raw.program;
  cfg.command_line = command_line_of(raw.program, args_in);
  return {std::move(cfg), 0};
}

}  // namespace ferry
