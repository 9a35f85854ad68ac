#pragma once
/// \file
/// No orphans: every rank carries FERRY_JOB_TAG=<job id>.<ferryd pid> in its environment,
/// which its descendants inherit even when they leave the rank's process group (setsid
/// daemons). The tag is per ferryd, not per job: several ferryds of one job may share a
/// process table (containers with a shared PID namespace, the simulated cluster), and one
/// finishing must not sweep another's ranks.
/// Where the kernel allows it ferryd is also its descendants' subreaper
/// (PR_SET_CHILD_SUBREAPER): an orphan, even one that cleared its environment and left for a
/// session of its own, is reparented to ferryd, not to init. Every process of the job is then
/// below ferryd, and the sweep walks down from it (the kernel's per-thread children lists):
/// a few reads per process of the job, where reading every process's environment costs two
/// per process on the host (a thousand on a busy one, at every job's end). Without the
/// subreaper, and in the guard (ferryd is gone, its orphans went elsewhere), the tag it is.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace ferry {

/// The variable that tags every process of a job on one host (its ranks and all they start),
/// so the sweep finds them: FERRY_JOB_TAG=<job id>.<ferryd pid>.
inline constexpr char kJobTagVar[] = "FERRY_JOB_TAG";

/// Pids under `proc_root` (normally "/proc") whose environment holds kJobTagVar=`job_id`,
/// excluding `self`. Processes we may not read are skipped.
std::vector<pid_t> find_tagged_processes(const std::string& job_id, pid_t self,
                                         const std::string& proc_root = "/proc");

/// Pids under `proc_root` whose chain of parents leads to `root`, except those in `spared` and
/// their own descendants, and zombies. Walked down from `root` through
/// <proc>/<pid>/task/<tid>/children where the kernel has them (CONFIG_PROC_CHILDREN, Linux
/// 3.5+), else found by the PPid of every process's status. Processes that vanish meanwhile
/// are skipped.
std::vector<pid_t> find_descendants(pid_t root, const std::vector<pid_t>& spared,
                                    const std::string& proc_root = "/proc");

/// How long sweep_job may take by default. ferryd sweeps on its event loop, but only at
/// the very end (every rank ended, or the front end is gone): nothing is served then but
/// the last frames, and its heartbeat timer is stopped; this bound keeps even that stall
/// well below one heartbeat interval (1 s at least).
inline constexpr std::chrono::milliseconds kSweepLimit{200};

/// SIGKILLs every process group in `pgids` and every tagged process (every descendant
/// instead, with `scope.descendants`: see SweepScope), repeating until none is found (a forking
/// process may spawn while we sweep), at most 20 passes and about `limit` (plus one scan of /proc).
/// It blocks: passes that found something are 10 ms apart. Returns how many were killed.
int sweep_job(const std::string& job_id, const std::vector<pid_t>& pgids,
              std::chrono::milliseconds limit = kSweepLimit);

/// What sweep_job kills besides the process groups. With `descendants` (the caller is a
/// subreaper, so the job is all below it), every descendant of the calling process
/// (find_descendants) but `spared`, in place of the tagged processes.
struct SweepScope {
  bool descendants = false;
  std::vector<pid_t> spared;
};

/// sweep_job, killing what `scope` names in every pass (a subreaper ferryd: every process
/// below it but its guard).
int sweep_job(const std::string& job_id, const std::vector<pid_t>& pgids, const SweepScope& scope,
              std::chrono::milliseconds limit = kSweepLimit);

/// A process that outlives ferryd just long enough to clean up after it. ferryd forks it at
/// start; it learns the job id, each rank's pgid and ferryd's directories through a pipe,
/// and when the pipe closes (ferryd exited or was killed, even by SIGKILL) it sweeps the job
/// (unless released), removes the directories and exits.
class Guard {
 public:
  Guard() = default;
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
  /// Forks the guard. Returns false (and ferryd runs without one) if fork fails.
  bool start();
  /// The guard's pid (a child of ferryd that a sweep must spare); -1 without one.
  pid_t pid() const { return pid_; }
  /// Tells the guard the job id (before any rank starts).
  void set_job(const std::string& job_id);
  /// Tells the guard a rank's process group.
  void add_pgid(pid_t pgid);
  /// A directory of ferryd's (the ranks' error files) that the guard removes once ferryd is
  /// gone, released or not: a ferryd killed before its own clean-up leaves nothing behind.
  void remove_at_exit(const std::string& dir);
  /// The process groups told so far are gone (an attempt ended and was swept): the guard
  /// forgets them and stays on guard for the next attempt's.
  void forget_pgids();
  /// ferryd cleaned up itself: the guard exits without sweeping (a finished rank's pgid
  /// may be reused by an unrelated process once its group is empty).
  void release();
  ~Guard();

 private:
  void send(const std::string& line);
  int fd_ = -1;
  pid_t pid_ = -1;
};

}  // namespace ferry
