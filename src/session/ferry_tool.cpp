// `ferry ps|logs|attach|top|stop|wait`: everything reads the job's directory; stop, --signal
// and top ask the job's front end through its control socket.
#include "ferry/session/ferry_tool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "ferry/common/build_info.hpp"
#include "ferry/common/posix_handles.hpp"
#include "ferry/session/control_socket.hpp"
#include "ferry/session/job_session.hpp"
#include "ferry/session/job_store.hpp"
#include "ferry/session/journal.hpp"
#include "ferry/sync/file_cache.hpp"
#include "ferry_top.hpp"

namespace ferry {

namespace {

constexpr auto kPollEvery = std::chrono::milliseconds(100);

std::atomic<bool> g_interrupted{false};

// Wakes a viewer when the job's directory changes, and at least every kPollEvery (a front
// end killed writes nothing). `journal`: the journal's writes too (a follower); else only
// the record's rewrites (`ferry wait`, woken once rather than on every write of the job).
// Without inotify, the poll alone.
class DirWatch {
 public:
  DirWatch(const std::string& dir, bool journal) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_)
      ::inotify_add_watch(fd_.get(), dir.c_str(),
                          IN_MOVED_TO | IN_CREATE | (journal ? IN_MODIFY : 0));
  }
  void wait() {
    if (!fd_) {
      std::this_thread::sleep_for(kPollEvery);
      return;
    }
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(kPollEvery.count())) > 0) {
      char buf[4096];
      while (::read(fd_.get(), buf, sizeof buf) > 0) {
      }
    }
  }

 private:
  UniqueFd fd_;
};

void on_interrupt(int /*signo*/) { g_interrupted = true; }

int refuse(const std::string& why) {
  std::fprintf(stderr, "ferry: %s\n", why.c_str());
  return 2;
}

void print(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

struct Found {
  std::string dir;
  JobRecord record;
};

// The job `id` names, or why not (printed by the caller).
Result<Found> find_job(const std::string& id) {
  auto jobs = default_jobs_directory();
  if (!jobs) return jobs.error();
  auto r = find_record(*jobs, id);
  if (!r) return r.error();
  return Found{*jobs + "/" + r->id, std::move(*r)};
}

// Its state, read until settled (settled_state()): `f.record` may be read again.
std::string state_of(Found& f) { return settled_state(f.dir, f.record); }

// Whether the job's record in `dir`, read now, says it is over (ended or lost); `r` gets it.
bool over_now(const std::string& dir, std::optional<JobRecord>& r, std::string& state) {
  auto now = read_record(dir);
  if (!now) return false;
  state = settled_state(dir, *now);
  r = std::move(*now);
  return state == "ended" || state == "lost";
}

// Whether the job is over, after its control socket could not be asked: the front end
// closes that socket first and writes its end into the record after (its journal finished),
// so a job ending under a request reads as running for a moment. Waits for the record while
// its front end lives, at most kSettleWait; false: the job runs on and the socket failed.
constexpr auto kSettleWait = std::chrono::seconds(10);
bool over_soon(const std::string& dir, std::optional<JobRecord>& r, std::string& state) {
  DirWatch watch(dir, false);
  const auto deadline = std::chrono::steady_clock::now() + kSettleWait;
  while (!over_now(dir, r, state)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    watch.wait();
  }
  return true;
}

std::string clock_text(int64_t t) {
  if (t <= 0) return "-";
  const auto tt = static_cast<time_t>(t);
  std::tm tm{};
  ::localtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// Keeps the lines of `text` that are rank `rank`'s (all of it for rank < 0); `partial` holds
// a line not yet ended, across calls.
std::string rank_filter(std::string text, int rank, std::string& partial) {
  if (rank < 0) return text;
  text = partial + text;
  partial.clear();
  std::string out;
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    const std::string_view line(text.data() + start, nl + 1 - start);
    if (is_rank_line(line, rank)) out += line;
    start = nl + 1;
  }
  partial = text.substr(start);
  return out;
}

// Prints what the journal gets until the job ends (or Ctrl-C when `until_interrupt`).
void follow(const Found& f, JournalFollower& follower, int rank, std::string& partial) {
  DirWatch watch(f.dir, true);
  auto record_checked = std::chrono::steady_clock::now();
  for (;;) {
    print(rank_filter(follower.poll(), rank, partial));
    if (g_interrupted) return;
    // The record, not on every write of a busy job: every kPollEvery.
    const auto now = std::chrono::steady_clock::now();
    if (now - record_checked < kPollEvery) {
      watch.wait();
      continue;
    }
    record_checked = now;
    std::optional<JobRecord> r;
    std::string state;
    if (over_now(f.dir, r, state) || !r) {
      print(rank_filter(follower.poll(), rank, partial));  // what came before the end
      return;
    }
    watch.wait();
  }
}

std::string dropped_marker(const std::string& dir) {
  const uint64_t dropped = journal_dropped(dir);
  if (dropped == 0) return "";
  return "ferry: [" + std::to_string(dropped) +
         " bytes of older output were dropped: " + "--journal-max]\n";
}

// "job X has ended (status N)" or "job X is lost (...)".
std::string ended_text(const JobRecord& r, const std::string& state) {
  if (state == "lost") return "job " + r.id + " is lost (its front end died without an end)";
  return "job " + r.id + " has ended (status " + std::to_string(r.exit_status) + ")";
}

int cmd_ps(bool prune) {
  auto jobs = default_jobs_directory();
  if (!jobs) return refuse(jobs.error().message);
  if (prune) {
    const int n = prune_jobs(*jobs, 0);
    std::fprintf(stderr, "ferry: removed %d ended job(s)\n", n);
  }
  std::printf("%-8s  %-8s  %6s  %5s  %-19s  %-24s  %s\n", "ID", "STATE", "STATUS", "RANKS",
              "STARTED", "HOSTS", "COMMAND");
  for (const auto& r : list_records(*jobs)) {
    Found f{*jobs + "/" + r.id, r};
    std::string hosts;
    for (size_t i = 0; i < r.hosts.size() && i < 3; ++i) hosts += (i ? "," : "") + r.hosts[i];
    if (r.hosts.size() > 3) hosts += ",+" + std::to_string(r.hosts.size() - 3);
    std::string command = r.command.size() > 60 ? r.command.substr(0, 57) + "..." : r.command;
    const std::string state = state_of(f);  // before the status: the record may be read again
    const std::string status =
        f.record.exit_status >= 0 ? std::to_string(f.record.exit_status) : "-";
    std::printf("%-8s  %-8s  %6s  %5d  %-19s  %-24s  %s\n", r.id.c_str(), state.c_str(),
                status.c_str(), r.ranks, clock_text(r.started).c_str(), hosts.c_str(),
                command.c_str());
  }
  return 0;
}

int cmd_logs(const std::string& id, bool follow_it, int rank) {
  auto f = find_job(id);
  if (!f) return refuse(f.error().message);
  // One follower from the start: what is there, then what comes, each byte once.
  JournalFollower follower(f->dir, true);
  std::string partial;
  print(dropped_marker(f->dir));
  print(rank_filter(follower.poll(), rank, partial));
  if (follow_it) follow(*f, follower, rank, partial);
  return 0;
}

// A request to the job's front end; its answer on stderr. A job that ended meanwhile (its
// socket gone) is said so.
int ask(Found& f, const std::string& request) {
  const std::string state = state_of(f);
  if (state == "ended" || state == "lost") return refuse(ended_text(f.record, state));
  auto answer = control_request(f.dir, request);
  if (!answer) {
    std::optional<JobRecord> now;
    std::string now_state;
    if (over_soon(f.dir, now, now_state)) return refuse(ended_text(*now, now_state));
    return refuse("job " + f.record.id + ": " + answer.error().message);
  }
  if (*answer == "already stopping") return refuse("job " + f.record.id + " is already stopping");
  if (*answer == "stopping") {
    std::fprintf(stderr,
                 "ferry: job %s is stopping (SIGTERM to its ranks, SIGKILL after the grace); "
                 "'ferry wait %s' gives its status\n",
                 f.record.id.c_str(), f.record.id.c_str());
    return 0;
  }
  if (answer->starts_with("sent ")) return 0;
  return refuse("job " + f.record.id + ": " + *answer);
}

int cmd_attach(const std::string& id, const std::string& since, const std::string& signal_name) {
  auto f = find_job(id);
  if (!f) return refuse(f.error().message);
  const std::string state = state_of(*f);
  if (!signal_name.empty()) return ask(*f, "signal " + signal_name);
  if (state == "ended" || state == "lost")
    return refuse(ended_text(f->record, state) + "; 'ferry logs " + f->record.id +
                  "' shows its output");
  size_t lines = 100;
  bool all = since == "all";
  if (!all && !since.empty()) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(since.c_str(), &end, 10);
    if (end == since.c_str() || *end != '\0')
      return refuse("--since: bad value '" + since + "' (expected a number of lines, or all)");
    lines = static_cast<size_t>(n);
  }
  JournalFollower follower(f->dir, true);
  const std::string text = follower.poll();
  if (all) print(dropped_marker(f->dir));
  print(all ? std::string_view(text) : last_lines(text, lines));
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  ::sigaction(SIGINT, &sa, nullptr);
  std::string partial;
  follow(*f, follower, -1, partial);
  if (g_interrupted) {
    std::fprintf(stderr, "\nferry: detached from job %s; it runs on\n", f->record.id.c_str());
    return 0;
  }
  auto r = read_record(f->dir);
  if (r && r->exit_status >= 0) return r->exit_status;
  return 255;
}

int cmd_top(const std::string& id) {
  auto f = find_job(id);
  if (!f) return refuse(f.error().message);
  const std::string state = state_of(*f);
  if (state == "ended" || state == "lost")
    return refuse(ended_text(f->record, state) + "; 'ferry logs " + f->record.id +
                  "' shows its output");
  const TopEnd end = run_ferry_top(f->dir, f->record.id);
  if (end.why.empty()) return 0;
  // The job ended under the view: said, and no error of the viewer's.
  std::optional<JobRecord> now;
  std::string now_state;
  if (end.gone && over_soon(f->dir, now, now_state)) {
    std::fprintf(stderr, "ferry: %s\n", ended_text(*now, now_state).c_str());
    return 0;
  }
  return refuse(end.why);
}

int cmd_stop(const std::string& id) {
  auto f = find_job(id);
  if (!f) return refuse(f.error().message);
  return ask(*f, "stop");
}

int cmd_wait(const std::string& id) {
  auto f = find_job(id);
  if (!f) return refuse(f.error().message);
  DirWatch watch(f->dir, false);
  for (int unreadable = 0;; watch.wait()) {
    auto r = read_record(f->dir);
    // Rewritten in place on a full disk: half of it, for a moment.
    if (!r && ++unreadable < 20) continue;
    if (!r) return refuse(r.error().message);
    unreadable = 0;
    const std::string state = settled_state(f->dir, *r);
    if (state == "ended") return r->exit_status;
    if (state == "lost") {
      std::fprintf(stderr,
                   "ferry: job %s: its front end is gone without an exit status (killed?); "
                   "its hosts stopped its ranks\n",
                   r->id.c_str());
      return 255;
    }
  }
}

}  // namespace

// This machine's cache of synced trees (docs/sync.md): what it keeps, and --clear.
int cmd_cache(bool clear) {
  auto c = FileCache::open(FileCache::default_base());
  if (!c) return refuse(c.error().message);
  if (clear) {
    const CacheUsage r = c->clear();
    print("removed " + std::to_string(r.files) + (r.files == 1 ? " file, " : " files, ") +
          bytes_text(r.bytes) + " and " + std::to_string(r.spares) +
          (r.spares == 1 ? " spare" : " spares") + " from " + c->base() + "\n");
  }
  const CacheUsage u = c->usage();
  print(c->base() + ": " + std::to_string(u.files) + (u.files == 1 ? " file, " : " files, ") +
        bytes_text(u.bytes) + "; " + std::to_string(u.copies) +
        (u.copies == 1 ? " copy" : " copies") + " of running jobs, " + std::to_string(u.spares) +
        (u.spares == 1 ? " spare" : " spares") + "\n" + "kept: files no job used for " +
        std::to_string(FileCache::kKeepSeconds / 86400) +
        " days go, then the least recently used beyond " + bytes_text(FileCache::kKeepBytes) +
        " (checked at most hourly, when a sync reaches this host); " +
        std::to_string(FileCache::kSpares) + " spares at most\n");
  return 0;
}

int run_ferry_tool(const std::vector<std::string>& args_in) {
  CLI::App app(
      "ferry: the jobs ferryrun keeps (--detach, --nohup), its warm pools and its cache of synced "
      "trees",
      "ferry");
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", "ferry " + version_text());
  app.footer(
      "A job's id may be shortened to its first characters. Jobs live in "
      "$XDG_STATE_HOME/ferry/jobs (else ~/.local/state/ferry/jobs), yours only.\n"
      "Exit status: 0; 'ferry wait' and 'ferry attach' the job's own once it ended (255: its "
      "front end died); 2 for bad input (an unknown id, stopping an ended job).");
  bool prune = false, follow_it = false, clear = false;
  int rank = -1;
  std::string id, since, signal_name;
  auto* ps = app.add_subcommand("ps", "List your jobs: id, state, status, ranks, hosts, command");
  ps->add_flag("--prune", prune, "Remove the records of ended jobs first");
  auto* logs = app.add_subcommand("logs", "Print a job's output from its journal");
  logs->add_option("id", id, "Job id (or its first characters)")->required();
  logs->add_flag("-f,--follow", follow_it, "Go on printing as the job writes, until it ends");
  logs->add_option("--rank", rank, "Only this rank's lines")
      ->check(CLI::Range(0, 1 << 24))
      ->type_name("RANK");
  auto* attach = app.add_subcommand("attach", "Show a job's output live; Ctrl-C leaves it running");
  attach->add_option("id", id, "Job id (or its first characters)")->required();
  attach->add_option("--since", since, "Lines of past output first: a number (default 100) or all")
      ->type_name("N|all");
  attach
      ->add_option("--signal", signal_name,
                   "Send this signal instead (INT, TERM, USR1, USR2, QUIT): INT and TERM stop "
                   "the job, USR1 and USR2 go to every rank, QUIT writes the job's state report "
                   "into the journal")
      ->type_name("SIGNAL");
  auto* top = app.add_subcommand(
      "top",
      "Show a job's ranks live (as ferryrun --top: q leaves, s sorts, h per host, / filters, "
      "o a rank's output); the job goes on");
  top->add_option("id", id, "Job id (or its first characters)")->required();
  auto* stop = app.add_subcommand("stop", "End a job as Ctrl-C would (SIGTERM, then SIGKILL)");
  stop->add_option("id", id, "Job id (or its first characters)")->required();
  auto* wait = app.add_subcommand("wait", "Wait for a job's end; exit with its status");
  wait->add_option("id", id, "Job id (or its first characters)")->required();
  auto* cache = app.add_subcommand(
      "cache", "Say what this machine's cache of synced trees (ferryrun --sync) keeps");
  cache->add_flag("--clear", clear, "Remove every cached file first");
  // The warm pool's commands are run by ferry's main before this parser (app.hpp's
  // run_pool_tool); listed here for --help.
  for (const auto& [name, what] : std::vector<std::pair<const char*, const char*>>{
           {"up",
            "Start a warm pool: ferryd kept on the hosts, jobs start without SSH (ferry up "
            "--help)"},
           {"down", "End a warm pool (default: the one named default; --all)"},
           {"pools", "List the warm pools and their hosts"}})
    app.add_subcommand(name, what)->allow_extras();
  std::vector<std::string> args(args_in.begin() + (args_in.empty() ? 0 : 1), args_in.end());
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return refuse(std::string(e.what()) + " (see ferry --help)");
  }
  if (ps->parsed()) return cmd_ps(prune);
  if (logs->parsed()) return cmd_logs(id, follow_it, rank);
  if (attach->parsed()) {
    if (!signal_name.empty() && job_signal_number(signal_name) == 0)
      return refuse("--signal: unknown signal '" + signal_name +
                    "' (INT, TERM, USR1, USR2 or QUIT)");
    return cmd_attach(id, since, signal_name);
  }
  if (stop->parsed()) return cmd_stop(id);
  if (top->parsed()) return cmd_top(id);
  if (cache->parsed()) return cmd_cache(clear);
  return cmd_wait(id);
}

}  // namespace ferry
