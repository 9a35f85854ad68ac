#pragma once
/// \file
/// Where detached jobs live: one private directory per user (`$XDG_STATE_HOME/ferry/jobs`,
/// else `~/.local/state/ferry/jobs`, mode 0700), one directory per job under it (`ID/`:
/// `job.json`, the record; `console.log` and `console.1.log`, the journal). The record is
/// rewritten whole (a temporary file renamed over it), so a reader never sees half of one.
/// Only the user's front end writes in a job's directory; `ferry` reads it and signals the
/// front end, whose pid it holds.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/result.hpp"

namespace ferry {

/// What `ferry ps` shows and `ferry wait` waits for.
struct JobRecord {
  std::string id;
  /// "starting", "running", "stopping", "ended"; a record whose front end died without
  /// ending it reads as "lost" (JobRecord::effective_state()).
  std::string state = "starting";
  pid_t pid = 0;                   ///< the detached front end
  uint64_t pid_start = 0;          ///< its start time (/proc/PID/stat field 22), against pid reuse
  int64_t started = 0;             ///< seconds since the epoch
  int64_t ended = 0;               ///< 0 while running
  int exit_status = -1;            ///< ferryrun's status once ended; -1 before
  std::vector<std::string> hosts;  ///< the job's hosts, as placed
  int ranks = 0;
  std::string command;         ///< the command line as the user gave it (one line)
  std::string journal_error;   ///< why the journal stopped taking output ("" none)
  uint64_t dropped_bytes = 0;  ///< older output --journal-max dropped

  /// `state`, or "lost" when it is not "ended" and its front end no longer runs.
  std::string effective_state() const;
};

/// The per-user jobs directory for `home` and `xdg_state_home` ("" when unset), made 0700 when
/// missing. Error, one line naming the directory: it is not a directory, is not owned by this
/// user, or can be written by others (group or world): a job's journal must not be readable
/// or replaceable by another user.
Result<std::string> jobs_directory(const std::string& home, const std::string& xdg_state_home);
/// jobs_directory() for this process's environment (HOME, else the passwd entry).
Result<std::string> default_jobs_directory();

/// A fresh id, 8 hex digits, with no directory under `jobs_dir` yet; the directory is made
/// (0700). Error: it cannot be made.
Result<std::string> create_job_directory(const std::string& jobs_dir);

/// Writes `r` as `dir/job.json` (atomically). Error: one line naming the file.
Status write_record(const std::string& dir, const JobRecord& r);
/// Reads `dir/job.json`. Error: missing or not a record.
Result<JobRecord> read_record(const std::string& dir);
/// The state of the job whose record `r` was read from `dir`: `r.effective_state()`, except
/// that a job found lost has its record read once more, and an end found there wins (`r` then
/// holds the record read again). A front end writes its end and exits: a record read before the
/// end was written and a look at /proc after the exit began (a busy machine may hold a reader
/// between the two) would call a job that ended lost.
std::string settled_state(const std::string& dir, JobRecord& r);
/// Every job under `jobs_dir` whose record reads, oldest first.
std::vector<JobRecord> list_records(const std::string& jobs_dir);
/// The job `id_or_prefix` names under `jobs_dir` (an exact id, or the start of exactly one).
/// Error: "no job 'x' (ferry ps lists them)", "'3' names 2 jobs: 3a1f..., 3b20...".
Result<JobRecord> find_record(const std::string& jobs_dir, const std::string& id_or_prefix);

/// Field 22 of /proc/PID/stat (start time in clock ticks); 0 when the process is gone.
uint64_t process_start_time(pid_t pid);
/// Whether `pid` still runs and is the process that started at `start` (not a reused pid):
/// not when it is a zombie or its exit has begun.
bool same_process_alive(pid_t pid, uint64_t start);
/// Whether a /proc/PID/stat text shows a process that has ended or is ending: state Z or X,
/// or the kernel's PF_EXITING flag. Also when the text is not a stat line.
bool stat_says_ended(std::string_view stat);

}  // namespace ferry
