#pragma once
/// \file
/// A front end whose job outlives its terminal. `ferryrun --detach` forks once every check
/// before the start has passed: the child (new session, no controlling terminal, stdin from
/// /dev/null, SIGHUP ignored) runs the job with its console in the journal; the parent waits
/// until every rank started (prints the job's id on stdout, how to follow it on stderr,
/// exits 0) or the job ended before (prints the journal on stderr, exits with the job's
/// status, as ferryrun would have). `--nohup` keeps the front end in the terminal and tees its
/// console to the journal, so the job survives a hangup and `ferry attach` can take over.
/// Either way the job's record (job_store.hpp) says its state, and its status once it ended,
/// and the front end serves the job's control socket (control_socket.hpp): `stop` (the
/// record says "stopping", the front end gets SIGTERM: Ctrl-C's grace), `signal NAME`
/// (handled as that signal from a terminal would be), `state`.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "ferry/common/result.hpp"
#include "ferry/monitor/view_board.hpp"
#include "ferry/session/control_socket.hpp"
#include "ferry/session/job_store.hpp"
#include "ferry/session/journal.hpp"

namespace ferry {

/// How many ended jobs' records are kept; older ones go when a new job starts.
inline constexpr size_t kKeptEndedJobs = 100;

struct SessionOptions {
  std::string jobs_dir;      ///< jobs_directory()
  uint64_t journal_max = 0;  ///< --journal-max in bytes; 0: unbounded
  std::string program;       ///< "ferryrun", for messages
  JobRecord record;          ///< hosts, ranks, command; the rest is filled here
  /// The job's live view, which the control socket hands to `ferry top` ("top", "top lines
  /// N"); null: none.
  std::shared_ptr<ViewBoard> board;
};

class JobSession {
 public:
  /// --detach. Returns the child's session; in the parent, never returns: it exits with the
  /// status described above. Error (in the caller, before any fork or after a failed one):
  /// one line.
  static Result<std::unique_ptr<JobSession>> detach(SessionOptions opts);
  /// --nohup: this process goes on in the terminal; its console also goes to the journal and
  /// stays there when the terminal goes away.
  static Result<std::unique_ptr<JobSession>> keep(SessionOptions opts);
  ~JobSession();
  JobSession(const JobSession&) = delete;
  JobSession& operator=(const JobSession&) = delete;

  const std::string& id() const { return record_.id; }
  /// Every rank of the first attempt started: the record says "running" and a waiting parent
  /// is released. Later calls do nothing.
  void all_started();
  /// The job ended with ferryrun's status `status`, its console done (`console_error`: the
  /// errno of its first failed write, 0 none): everything is in the journal, the record
  /// says "ended" with the status, and why the journal stopped if it did.
  void ended(int status, int console_error);

 private:
  JobSession(SessionOptions opts, std::unique_ptr<ConsoleJournal> journal, int ready_fd);
  /// Sets dir_, writes the first record and starts the control socket.
  Status open(const std::string& dir);
  void save();  // under mutex_
  std::string control(const std::string& request);

  std::string dir_;
  std::mutex mutex_;  // record_: the control socket's thread changes it too
  JobRecord record_;
  std::shared_ptr<ViewBoard> board_;  // the job's view for `ferry top`; null none
  std::unique_ptr<ControlServer> control_;
  std::unique_ptr<ConsoleJournal> journal_;
  int ready_fd_ = -1;  // the parent waits on it (detach only)
};

/// Removes the directories of ended (or lost) jobs under `jobs_dir` beyond the newest `keep`
/// of them. Returns how many went.
int prune_jobs(const std::string& jobs_dir, size_t keep);

/// The signal `name` names ("USR1" or "SIGUSR1"; INT, TERM, USR1, USR2, QUIT: those a kept
/// job takes; it ignores HUP), 0 for any other.
int job_signal_number(const std::string& name);

}  // namespace ferry
