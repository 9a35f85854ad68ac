// The per-user jobs directory and the job records in it.
#include "ferry/session/job_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ferry/common/environ.hpp"
#include "ferry/common/posix_handles.hpp"
#include "ferry/common/private_dir.hpp"
#include "ferry/common/random_bytes.hpp"
#include "ferry/common/read_text_file.hpp"

namespace ferry {

namespace {

std::string errno_text() { return std::strerror(errno); }

nlohmann::json to_json(const JobRecord& r) {
  return {{"id", r.id},
          {"state", r.state},
          {"pid", r.pid},
          {"pid_start", r.pid_start},
          {"started", r.started},
          {"ended", r.ended},
          {"exit_status", r.exit_status},
          {"hosts", r.hosts},
          {"ranks", r.ranks},
          {"command", r.command},
          {"journal_error", r.journal_error},
          {"dropped_bytes", r.dropped_bytes}};
}

}  // namespace

std::string JobRecord::effective_state() const {
  if (state == "ended" || same_process_alive(pid, pid_start)) return state;
  return "lost";
}

Result<std::string> jobs_directory(const std::string& home, const std::string& xdg_state_home) {
  return ferry_state_dir(home, xdg_state_home, "jobs", "jobs");
}

Result<std::string> default_jobs_directory() { return ferry_state_dir("jobs", "jobs"); }

Result<std::string> create_job_directory(const std::string& jobs_dir) {
  for (int tries = 0; tries < 16; ++tries) {
    auto bytes = random_bytes(4);
    if (!bytes) return bytes.error();
    const std::string id = hex_text(*bytes);
    const std::string dir = jobs_dir + "/" + id;
    if (::mkdir(dir.c_str(), 0700) == 0) return id;
    if (errno != EEXIST) return make_error(dir + ": cannot create: " + errno_text());
  }
  return make_error(jobs_dir + ": no free job id");
}

Status write_record(const std::string& dir, const JobRecord& r) {
  const std::string path = dir + "/job.json", tmp = path + ".tmp";
  const std::string text = to_json(r).dump(1) + "\n";
  auto write_all = [&](const std::string& file, int flags) {
    UniqueFd fd(::open(file.c_str(), flags | O_WRONLY | O_CLOEXEC, 0600));
    if (!fd) return false;
    if (::pwrite(fd.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
      return false;
    return ::ftruncate(fd.get(), static_cast<off_t>(text.size())) == 0;
  };
  // Whole, by a rename, so that a reader never sees half of it.
  if (write_all(tmp, O_CREAT | O_TRUNC) && ::rename(tmp.c_str(), path.c_str()) == 0) return {};
  const int first = errno;
  ::unlink(tmp.c_str());
  // A full disk has no block for a new file: the record is rewritten where it is (a reader
  // that meets half of it reads again).
  if ((first == ENOSPC || first == EDQUOT) && write_all(path, 0)) return {};
  return make_error(path + ": cannot write: " + std::strerror(first));
}

Result<JobRecord> read_record(const std::string& dir) {
  auto text = read_text_file(dir + "/job.json", size_t{1} << 20, "job record");
  if (!text) return text.error();
  auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return make_error(dir + "/job.json: not a job record");
  JobRecord r;
  try {
    r.id = j.value("id", "");
    r.state = j.value("state", "");
    r.pid = j.value("pid", 0);
    r.pid_start = j.value("pid_start", uint64_t{0});
    r.started = j.value("started", int64_t{0});
    r.ended = j.value("ended", int64_t{0});
    r.exit_status = j.value("exit_status", -1);
    r.hosts = j.value("hosts", std::vector<std::string>{});
    r.ranks = j.value("ranks", 0);
    r.command = j.value("command", "");
    r.journal_error = j.value("journal_error", "");
    r.dropped_bytes = j.value("dropped_bytes", uint64_t{0});
  } catch (const nlohmann::json::exception&) {
    return make_error(dir + "/job.json: not a job record");
  }
  return r;
}

std::string settled_state(const std::string& dir, JobRecord& r) {
  std::string state = r.effective_state();
  if (state != "lost") return state;
  if (auto again = read_record(dir); again && again->state == "ended") {
    r = std::move(*again);
    return "ended";
  }
  return state;
}

std::vector<JobRecord> list_records(const std::string& jobs_dir) {
  std::vector<JobRecord> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(jobs_dir, ec))
    if (auto r = read_record(e.path().string())) out.push_back(std::move(*r));
  std::sort(out.begin(), out.end(), [](const JobRecord& a, const JobRecord& b) {
    return a.started != b.started ? a.started < b.started : a.id < b.id;
  });
  return out;
}

Result<JobRecord> find_record(const std::string& jobs_dir, const std::string& id_or_prefix) {
  std::vector<JobRecord> hits;
  for (auto& r : list_records(jobs_dir)) {
    if (r.id == id_or_prefix) return r;
    if (!id_or_prefix.empty() && r.id.starts_with(id_or_prefix)) hits.push_back(std::move(r));
  }
  if (hits.size() == 1) return hits.front();
  if (hits.empty()) return make_error("no job '" + id_or_prefix + "' (ferry ps lists them)");
  std::string ids;
  for (const auto& r : hits) ids += (ids.empty() ? "" : ", ") + r.id;
  return make_error("'" + id_or_prefix + "' names " + std::to_string(hits.size()) +
                    " jobs: " + ids);
}

namespace {

// proc(5)'s field 22, the start time in clock ticks; 0 when missing.
uint64_t start_ticks(const std::vector<std::string_view>& fields) {
  uint64_t start = 0;
  if (fields.size() < 20) return 0;
  std::from_chars(fields[19].data(), fields[19].data() + fields[19].size(), start);
  return start;
}

}  // namespace

uint64_t process_start_time(pid_t pid) {
  if (pid <= 0) return 0;
  auto text = read_text_file("/proc/" + std::to_string(pid) + "/stat", 4096, "stat file");
  return text ? start_ticks(stat_fields(*text)) : 0;
}

namespace {

// Zombie, dead, or PF_EXITING (0x4 in the flags, field 9): SIGKILL's exit has begun, and the
// front end's sockets close before it turns zombie, so its hosts may end the ranks first.
bool fields_say_ended(const std::vector<std::string_view>& fields) {
  if (fields.size() < 7) return true;
  if (fields[0] == "Z" || fields[0] == "X" || fields[0] == "x") return true;
  unsigned long flags = 0;
  std::from_chars(fields[6].data(), fields[6].data() + fields[6].size(), flags);
  return (flags & 0x4U) != 0;
}

}  // namespace

bool stat_says_ended(std::string_view stat) { return fields_say_ended(stat_fields(stat)); }

bool same_process_alive(pid_t pid, uint64_t start) {
  if (pid <= 0) return false;
  auto text = read_text_file("/proc/" + std::to_string(pid) + "/stat", 4096, "stat file");
  if (!text) return false;
  const auto fields = stat_fields(*text);
  if (fields_say_ended(fields)) return false;
  const uint64_t now = start_ticks(fields);
  return now != 0 && (start == 0 || now == start);
}

}  // namespace ferry
