#include "rank_launcher.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <utility>

#include "ferry/binding/report.hpp"
#include "ferry/common/read_text_file.hpp"
#include "ferry/daemon/open_mpi_host.hpp"
#include "ferry/daemon/own_name.hpp"
#include "ferry/daemon/sweeper.hpp"
#include "ferry/rendezvous/framework_env.hpp"

namespace ferry {
namespace {

// Output pipes hold this much in all, shared by every rank's stdout and stderr, each pipe
// between the kernel's default (64 KiB) and its unprivileged maximum (1 MiB). A pipe that
// holds more lets a rank write longer before it waits and lets ferryd move larger frames:
// fewer wake-ups on both sides. The budget stays far below the kernel's default per-user
// limit on pipe memory (pipe-user-pages-soft, 64 MiB), past which new pipes shrink.
constexpr size_t kPipeBudget = size_t{16} << 20;
constexpr size_t kPipeMin = size_t{64} << 10;
constexpr size_t kPipeMax = size_t{1} << 20;

// Grows a rank's output pipe; a refusal (a limit, an old kernel) keeps the default.
void size_output_pipe(int fd, size_t ranks) {
  const size_t want =
      std::clamp(kPipeBudget / (2 * std::max<size_t>(ranks, 1)), kPipeMin, kPipeMax);
  if (want > kPipeMin) ::fcntl(fd, F_SETPIPE_SZ, static_cast<int>(want));
}

// Open MPI 4.1 takes a PMIx server's world only when one of its "schizo" components claims the
// launch (Slurm's, Flux's, LSF's); the generic one declares every other process a singleton,
// whatever PMIx variables it has. Leaving those out makes MPI_Init use PMIx (its ess/pmi), as
// under srun. And the rank is bound already (or deliberately not): MPI_Init must not bind it
// again. A value the user set wins.
std::vector<std::string> open_mpi_direct_launch(const std::vector<std::string>& env) {
  std::vector<std::string> out;
  for (const char* kv :
       {"OMPI_MCA_schizo=^orte,slurm,flux,jsm", "OMPI_MCA_orte_bound_at_launch=1"}) {
    const std::string_view name(kv, std::string_view(kv).find('=') + 1);
    if (std::none_of(env.begin(), env.end(),
                     [&](const std::string& e) { return e.starts_with(name); }))
      out.emplace_back(kv);
  }
  return out;
}

std::vector<std::string> own_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

}  // namespace

RankLauncher::RankLauncher(ProcessSpawner& spawner, std::string host,
                           std::function<void(const std::string&)> log)
    : spawner_(spawner), host_(std::move(host)), log_(std::move(log)) {}

RankLauncher::~RankLauncher() {
  std::error_code ignored;
  if (!error_dir_.empty()) std::filesystem::remove_all(error_dir_, ignored);
}

void RankLauncher::load_devices(const std::string& root) {
  device_root_ = root;
  binder_.load(root);
}

void RankLauncher::prepare(const wire::HostSpec& spec, const std::string& tag, PmiProxy* pmi) {
  spec_ = &spec;
  pmi_ = pmi;
  pmix_ = nullptr;
  prepared_ = spec.ranks.size();
  base_env_ = own_environment();
  wdir_ = spec.wdir;
  if (!wdir_.empty() && ::access(wdir_.c_str(), X_OK) != 0 && spec.wdir_fallback) {
    // The front end's directory does not exist here: start in $HOME, as ssh would.
    const char* home = ::getenv("HOME");
    if (spec.verbose)
      log_(host_ + ": " + wdir_ + " does not exist here; ranks start in " + (home ? home : "/"));
    wdir_ = home ? home : "/";
  }
  tags_ = {std::string(kJobTagVar) + "=" + tag, "FERRY_JOB_ID=" + spec.job_id};
  open_mpi_ = read_open_mpi_host(device_root_, merge_environment({base_env_, spec.env}));
  open_mpi_logged_ = false;
  name_error_.clear();
  name_need_ = !uses_horovod_gloo(merge_environment({base_env_, spec.env})) ? NameNeed::kNone
               : spec.horovod                                               ? NameNeed::kRequire
                                                                            : NameNeed::kWarn;
  if (spec.error_files && error_dir_.empty()) {
    // One private directory per ferryd (0700), removed when it exits.
    const char* tmp = ::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/ferry-errors-XXXXXX";
    if (::mkdtemp(templ.data()))
      error_dir_ = templ;
    else
      log_(host_ + ": cannot create a directory for the ranks' error files under " +
           templ.substr(0, templ.rfind('/')) + "; TORCHELASTIC_ERROR_FILE is not set");
  }
  // Cores and devices for every local rank, computed before the first fork.
  std::vector<std::string> lines;
  std::vector<int> global_ranks;
  for (const auto& rl : spec.ranks) global_ranks.push_back(rl.rank);
  bindings_ = binder_.plan(spec.binding, global_ranks, spec.world_size,
                           merge_environment({base_env_, spec.env}), host_, spec.verbose, lines);
  for (const auto& line : lines) log_(line);
}

// Horovod's gloo binds to the address of this host's name: a name it cannot use fails the
// ranks of a horovodrun job here, with the cause; any other job only hears a warning (its
// ranks may not be Horovod's). Once per attempt; ferryd looks the name up off its loop.
void RankLauncher::name_checked(const Status& st) {
  if (st || !spec_) return;
  if (name_need_ == NameNeed::kRequire)
    name_error_ = st.error().message;
  else if (name_need_ == NameNeed::kWarn && spec_->attempt == 0)
    log_(host_ + ": warning: " + st.error().message + "; Horovod ranks would fail here");
}

Result<LaunchedRank> RankLauncher::start(size_t local) {
  const wire::RankLaunch& rl = spec_->ranks[local];
  if (!bindings_) return bindings_.error();  // no rank of this host can run as asked
  if (!name_error_.empty()) return make_error(name_error_);
  const RankBinding* binding = local < bindings_->ranks.size() ? &bindings_->ranks[local] : nullptr;
  if (!binding && !rl.pmix_nspace.empty()) binding = spawned_binding(local);
  if (binding && spec_->binding.report_bindings)
    log_(format_binding_report(host_, rl.rank, *binding, *bindings_));
  SpawnRequest req;
  req.env = environment(rl, binding);
  if (std::string ef = error_file_path(local); !ef.empty()) {
    ::unlink(ef.c_str());  // a previous attempt's
    req.env = merge_environment({req.env, {"TORCHELASTIC_ERROR_FILE=" + ef}});
  }
  // An MPMD rank runs its part's command, in its part's directory when the part names one.
  const std::vector<std::string>& argv = rl.argv.empty() ? spec_->argv : rl.argv;
  const std::string& wdir = rl.wdir.empty() ? wdir_ : rl.wdir;
  auto path = resolve_command(argv.empty() ? "" : argv[0], req.env, wdir);
  if (!path) return path.error();
  req.path = std::move(*path);
  req.argv = argv;
  req.wdir = wdir;
  req.binding = binding;

  // The child's ends close here once it has its own copies, ferryd's ends go back.
  auto out = make_pipe();
  if (!out) return out.error();
  auto err = make_pipe();
  if (!err) return err.error();
  size_output_pipe(out->read.get(), spec_->ranks.size());
  size_output_pipe(err->read.get(), spec_->ranks.size());
  Pipe in;
  UniqueFd devnull;
  if (rl.rank == spec_->stdin_rank) {
    auto p = make_pipe();
    if (!p) return p.error();
    in = std::move(*p);
    req.stdin_fd = in.read.get();
  } else {
    devnull = open_dev_null();
    req.stdin_fd = devnull.get();
  }
  req.stdout_fd = out->write.get();
  req.stderr_fd = err->write.get();
  add_rendezvous(req, rl, local);

  auto pid = spawner_.spawn(req);
  if (pmi_) pid ? pmi_->spawned(rl.rank) : pmi_->drop(rl.rank);  // no-ops without a socket
  if (!pid) return pid.error();
  return LaunchedRank{*pid, std::move(out->read), std::move(err->read), std::move(in.write)};
}

// A process MPI_Comm_spawn started is bound as the job's rules bind local rank `local` when
// the host's plan is made for every process started here so far, as mpirun binds children
// with the job's policy; it runs unbound where they no longer fit (more than the cores).
const RankBinding* RankLauncher::spawned_binding(size_t local) {
  std::vector<std::string> lines;
  auto plan = binder_.plan(spec_->binding, static_cast<int>(local + 1),
                           merge_environment({base_env_, spec_->env}), host_, false, lines);
  if (!plan || local >= plan->ranks.size() || !plan->ranks[local].bound) return nullptr;
  spawned_plans_.push_back(std::make_unique<HostBindingPlan>(std::move(*plan)));
  return &spawned_plans_.back()->ranks[local];
}

// Later layers win: ferryd's environment, the rank's binding variables (never one the user
// set), the job's, the rank's own, and the tags the sweep and the job's tools look for. Then
// the directories mpirun's --prefix puts first on PATH and LD_LIBRARY_PATH, over the result
// (an exported PATH included, as Open MPI does).
std::vector<std::string> RankLauncher::environment(const wire::RankLaunch& rl,
                                                   const RankBinding* binding) const {
  return prepend_paths(
      merge_environment({base_env_, binding ? binding->env : std::vector<std::string>{}, spec_->env,
                         rl.env, tags_}),
      spec_->path_prepends);
}

std::vector<std::string> RankLauncher::cpusets() const {
  std::vector<std::string> out;
  if (!bindings_) return out;
  for (const auto& b : bindings_->ranks) out.push_back(b.bound ? b.cpu_list : "UNBOUND");
  return out;
}

std::string RankLauncher::error_file_path(size_t local) const {
  if (!spec_ || !spec_->error_files || error_dir_.empty() || local >= spec_->ranks.size())
    return "";
  return error_dir_ + "/attempt" + std::to_string(spec_->attempt) + "-rank" +
         std::to_string(spec_->ranks[local].rank) + ".json";
}

std::string RankLauncher::error_file(size_t local) const {
  const std::string path = error_file_path(local);
  if (path.empty() || ::access(path.c_str(), F_OK) != 0) return "";
  auto text = read_text_file(path, wire::kErrorFileLimit, "torchelastic error file");
  if (!text) return text.error().message;
  return std::move(*text);
}

// What an Open MPI rank gets besides PMIx's variables: the direct launch's settings and the
// transports this host lacks left out (rendezvous/open_mpi_mca.hpp). A value the user set wins.
std::vector<std::string> RankLauncher::open_mpi_environment(const std::vector<std::string>& env) {
  std::vector<std::string> out = open_mpi_direct_launch(env);
  std::string why;
  auto mtl = open_mpi_mtl_variable(open_mpi_, env, why);
  if (mtl) out.push_back(*mtl);
  if (spec_->verbose && !open_mpi_logged_) {
    open_mpi_logged_ = true;
    log_(host_ + ": Open MPI ranks: " +
         (mtl ? *mtl + " (no Omni-Path or TrueScale adapter here; their PSM libraries take "
                       "0.1 s each to load)"
              : "their mtl components as Open MPI chooses (" + why + ")"));
  }
  return out;
}

// The rank's extra arguments and, with PMI on, its end of a PMI socket pair (MPICH) and its
// PMIx variables (Open MPI). Each family reads only its own variables.
void RankLauncher::add_rendezvous(SpawnRequest& req, const wire::RankLaunch& rl, size_t local) {
  req.argv.insert(req.argv.end(), rl.extra_args.begin(), rl.extra_args.end());
  if (local >= prepared_) {
    // A process MPI_Comm_spawn started: with MPICH, a PMI-1 socket of its process group's;
    // with Open MPI, its own namespace's variables.
    if (auto m = pmi_ ? pmi_->member(rl.rank) : std::nullopt)
      return add_pmi_socket(req, rl.rank, *m, true);
    if (!pmix_ || rl.pmix_nspace.empty()) return;
    auto env = pmix_->child_environment(rl.pmix_nspace, rl.pmix_rank);
    if (env)
      req.env = merge_environment({req.env, *env, open_mpi_environment(req.env)});
    else
      log_(host_ + ": spawned process " + std::to_string(rl.rank) +
           " starts without PMIx: " + env.error().message);
    return;
  }
  if (pmix_) {
    auto env = pmix_->rank_environment(rl.rank);
    if (env)
      req.env = merge_environment({req.env, *env, open_mpi_environment(req.env)});
    else
      log_(host_ + ": rank " + std::to_string(rl.rank) +
           " starts without PMIx: " + env.error().message);
  }
  if (pmi_)
    add_pmi_socket(req, rl.rank,
                   {rl.rank, spec_->world_size, static_cast<int>(local),
                    static_cast<int>(spec_->ranks.size())},
                   false);
}

// Process `id`'s end of its PMI-1 socket pair, kept open in it, and the variables that name
// the socket and its place in its group (`spawned`: a spawn's process, which simple PMI's
// PMI_Init learns from PMI_SPAWNED).
void RankLauncher::add_pmi_socket(SpawnRequest& req, int id, const PmiProxy::Member& place,
                                  bool spawned) {
  auto fd = pmi_->open_rank(id);
  if (!fd) {
    log_(host_ + ": " + (spawned ? "spawned process " : "rank ") + std::to_string(id) +
         " starts without PMI: " + fd.error().message);
    return;
  }
  req.keep_fds.push_back(*fd);
  auto env = pmi_environment(*fd, place.rank, place.size, host_, place.local, place.local_size);
  if (spawned) env.emplace_back("PMI_SPAWNED=1");
  req.env = merge_environment({req.env, env});
}

}  // namespace ferry
