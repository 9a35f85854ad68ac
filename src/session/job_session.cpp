// --detach and --nohup: the fork, the new session, the record's states and the parent that
// waits for the ranks to start.
#include "ferry/session/job_session.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "ferry/common/signal_names.hpp"

namespace ferry {

namespace {

// The parent of a detached front end: 0 and the job's id once every rank started; else the
// job's own status, with what it printed.
int wait_for_start(pid_t child, int ready, const std::string& dir, const SessionOptions& opts) {
  char c = 0;
  ssize_t n = 0;
  do n = ::read(ready, &c, 1);
  while (n < 0 && errno == EINTR);
  ::close(ready);
  if (n == 1) {
    const std::string id = std::filesystem::path(dir).filename().string();
    std::printf("%s\n", id.c_str());
    std::fprintf(stderr,
                 "%s: job %s runs detached: %d rank(s) on %zu host(s); follow it with 'ferry "
                 "attach %s' (Ctrl-C leaves it running), or 'ferry logs|stop|wait %s'\n",
                 opts.program.c_str(), id.c_str(), opts.record.ranks, opts.record.hosts.size(),
                 id.c_str(), id.c_str());
    std::fflush(stdout);
    return 0;
  }
  // It ended before every rank started: report as an attached ferryrun would have.
  int st = 0;
  while (::waitpid(child, &st, 0) < 0 && errno == EINTR) {
  }
  const std::string text = read_journal(dir);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Result<std::string> new_job_dir(const SessionOptions& opts, std::string& id) {
  prune_jobs(opts.jobs_dir, kKeptEndedJobs);
  auto made = create_job_directory(opts.jobs_dir);
  if (!made) return made.error();
  id = *made;
  return opts.jobs_dir + "/" + id;
}

}  // namespace

JobSession::JobSession(SessionOptions opts, std::unique_ptr<ConsoleJournal> journal, int ready_fd)
    : record_(std::move(opts.record)),
      board_(std::move(opts.board)),
      journal_(std::move(journal)),
      ready_fd_(ready_fd) {}

JobSession::~JobSession() {
  if (ready_fd_ >= 0) ::close(ready_fd_);
}

Result<std::unique_ptr<JobSession>> JobSession::detach(SessionOptions opts) {
  std::string id;
  auto dir = new_job_dir(opts, id);
  if (!dir) return dir.error();
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0)
    return make_error(std::string("cannot detach: ") + std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t child = ::fork();
  if (child < 0) {
    const std::string why = std::strerror(errno);
    ::close(ready[0]);
    ::close(ready[1]);
    return make_error("cannot detach: " + why);
  }
  if (child > 0) {
    ::close(ready[1]);
    std::_Exit(wait_for_start(child, ready[0], *dir, opts));
  }
  ::close(ready[0]);
  // The child: no terminal, no hangup, nothing to read.
  ::setsid();
  ::signal(SIGHUP, SIG_IGN);
  if (const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC); null >= 0) {
    ::dup2(null, 0);
    ::close(null);
  }
  auto journal = std::make_unique<JournalRotator>(*dir, opts.journal_max);
  if (Status st = journal->start(); !st) {
    std::fprintf(stderr, "%s: %s\n", opts.program.c_str(), st.error().message.c_str());
    std::_Exit(1);
  }
  opts.record.id = id;
  const std::string program = opts.program;
  auto s =
      std::unique_ptr<JobSession>(new JobSession(std::move(opts), std::move(journal), ready[1]));
  if (Status st = s->open(*dir); !st) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), st.error().message.c_str());
    std::_Exit(1);
  }
  return s;
}

Result<std::unique_ptr<JobSession>> JobSession::keep(SessionOptions opts) {
  std::string id;
  auto dir = new_job_dir(opts, id);
  if (!dir) return dir.error();
  auto journal = Journal::open(*dir, opts.journal_max);
  if (!journal) return journal.error();
  ::signal(SIGHUP, SIG_IGN);
  auto pump = std::make_unique<JournalPump>(std::move(*journal), true);
  if (Status st = pump->start(); !st) return st.error();
  opts.record.id = id;
  auto s = std::unique_ptr<JobSession>(new JobSession(std::move(opts), std::move(pump), -1));
  if (Status st = s->open(*dir); !st) return st.error();
  return s;
}

Status JobSession::open(const std::string& dir) {
  dir_ = dir;
  {
    std::lock_guard lock(mutex_);
    save();
  }
  auto server = ControlServer::start(dir_, [this](const std::string& r) { return control(r); });
  if (!server) return server.error();
  control_ = std::move(*server);
  return {};
}

// One request of the control socket (its thread). The signals go through the front end's
// own handling, as if sent from a terminal: SIGTERM's grace, USR1 and USR2 to every rank.
std::string JobSession::control(const std::string& request) {
  std::lock_guard lock(mutex_);
  if (request == "state") return record_.state;
  if (request == "top" || request.starts_with("top lines ")) {
    if (!board_) return "no view";
    if (request == "top") {
      std::string rows = board_->rows();
      return rows.empty() ? "no rows yet" : rows;
    }
    return board_->lines(std::atoi(request.c_str() + 10));
  }
  int signo = 0;
  if (request == "stop")
    signo = SIGTERM;
  else if (request.starts_with("signal "))
    signo = job_signal_number(request.substr(7));
  if (signo == 0) return "unknown request '" + request + "'";
  const bool stops = signo == SIGTERM || signo == SIGINT;
  if (stops && record_.state == "stopping") return "already stopping";
  if (stops) {
    record_.state = "stopping";
    save();
  }
  if (::kill(::getpid(), signo) != 0) return std::string("cannot: ") + std::strerror(errno);
  return stops ? "stopping" : std::string("sent SIG") + signal_abbrev(signo);
}

void JobSession::save() {
  if (record_.pid == 0) {
    record_.pid = ::getpid();
    record_.pid_start = process_start_time(record_.pid);
    record_.started = std::time(nullptr);
  }
  // A record that cannot be written leaves the job running; the journal says why.
  if (Status st = write_record(dir_, record_); !st)
    std::fprintf(stderr, "ferry: %s\n", st.error().message.c_str());
}

void JobSession::all_started() {
  std::lock_guard lock(mutex_);
  if (record_.state != "starting") return;
  record_.state = "running";
  save();
  if (ready_fd_ >= 0) {
    const char r = 'R';
    (void)!::write(ready_fd_, &r, 1);
    ::close(ready_fd_);
    ready_fd_ = -1;
  }
}

void JobSession::ended(int status, int console_error) {
  std::fflush(stdout);
  std::fflush(stderr);
  control_.reset();  // no request after the end: `ferry stop` reads the record instead
  auto [error, dropped] = journal_->finish();
  if (error.empty() && console_error != 0)
    error = std::string("cannot write the journal: ") + std::strerror(console_error);
  std::lock_guard lock(mutex_);
  record_.state = "ended";
  record_.exit_status = status;
  record_.ended = std::time(nullptr);
  record_.journal_error = error;
  record_.dropped_bytes = dropped;
  save();
}

int prune_jobs(const std::string& jobs_dir, size_t keep) {
  std::vector<JobRecord> done;
  for (auto& r : list_records(jobs_dir))
    if (r.effective_state() == "ended" || r.effective_state() == "lost") done.push_back(r);
  int removed = 0;
  for (size_t i = 0; i + keep < done.size(); ++i) {
    std::error_code ec;
    if (std::filesystem::remove_all(jobs_dir + "/" + done[i].id, ec) > 0) ++removed;
  }
  return removed;
}

}  // namespace ferry

namespace ferry {

int job_signal_number(const std::string& name) {
  const std::string n = name.starts_with("SIG") ? name.substr(3) : name;
  const std::pair<const char*, int> known[] = {
      {"INT", SIGINT}, {"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"QUIT", SIGQUIT}};
  for (const auto& [k, v] : known)
    if (n == k) return v;
  return 0;
}

}  // namespace ferry
