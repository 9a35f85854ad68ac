// What horovodrun puts into the ranks' environment besides the rank variables: its tunables
// as HOROVOD_* (horovod/runner/common/util/config_parser.py) and the launcher's own
// environment (launch.py copies os.environ; env.py filters a few names).

#include <cctype>
#include <cstring>

#include "cli_parts.hpp"
#include "cli_text.hpp"

namespace ferry::cli_detail {
namespace {

enum class Kind {
  kCount,   // integer >= 0
  kMb,      // integer >= 0 megabytes, exported in bytes
  kNumber,  // number >= 0
  kNoise,   // number in [0, 1]
  kText,    // any non-empty text
  kLevel,   // TRACE..FATAL
  kOnOff,   // "1" / "0"
};

// Which tunables need which switch, as horovodrun exports them only then.
enum class Needs { kNothing, kAutotune, kTimeline };

struct Tunable {
  const char* flag;
  const char* env;
  Kind kind;
  Needs needs;
};

const Tunable tunables[] = {
    {"fusion-threshold-mb", "HOROVOD_FUSION_THRESHOLD", Kind::kMb, Needs::kNothing},
    {"cycle-time-ms", "HOROVOD_CYCLE_TIME", Kind::kNumber, Needs::kNothing},
    {"cache-capacity", "HOROVOD_CACHE_CAPACITY", Kind::kCount, Needs::kNothing},
    {"hierarchical-allreduce", "HOROVOD_HIERARCHICAL_ALLREDUCE", Kind::kOnOff, Needs::kNothing},
    {"hierarchical-allgather", "HOROVOD_HIERARCHICAL_ALLGATHER", Kind::kOnOff, Needs::kNothing},
    {"torus-allreduce", "HOROVOD_TORUS_ALLREDUCE", Kind::kOnOff, Needs::kNothing},
    {"autotune", "HOROVOD_AUTOTUNE", Kind::kOnOff, Needs::kAutotune},
    {"autotune-log-file", "HOROVOD_AUTOTUNE_LOG", Kind::kText, Needs::kAutotune},
    {"autotune-warmup-samples", "HOROVOD_AUTOTUNE_WARMUP_SAMPLES", Kind::kCount, Needs::kAutotune},
    {"autotune-steps-per-sample", "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", Kind::kCount,
     Needs::kAutotune},
    {"autotune-bayes-opt-max-samples", "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", Kind::kCount,
     Needs::kAutotune},
    {"autotune-gaussian-process-noise", "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", Kind::kNoise,
     Needs::kAutotune},
    {"timeline-filename", "HOROVOD_TIMELINE", Kind::kText, Needs::kTimeline},
    {"timeline-mark-cycles", "HOROVOD_TIMELINE_MARK_CYCLES", Kind::kOnOff, Needs::kTimeline},
    {"no-stall-check", "HOROVOD_STALL_CHECK_DISABLE", Kind::kOnOff, Needs::kNothing},
    {"stall-check-warning-time-seconds", "HOROVOD_STALL_CHECK_TIME_SECONDS", Kind::kCount,
     Needs::kNothing},
    {"stall-check-shutdown-time-seconds", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", Kind::kCount,
     Needs::kNothing},
    {"mpi-threads-disable", "HOROVOD_MPI_THREADS_DISABLE", Kind::kOnOff, Needs::kNothing},
    {"num-nccl-streams", "HOROVOD_NUM_NCCL_STREAMS", Kind::kCount, Needs::kNothing},
    {"thread-affinity", "HOROVOD_THREAD_AFFINITY", Kind::kCount, Needs::kNothing},
    {"tcp", "NCCL_IB_DISABLE", Kind::kOnOff, Needs::kNothing},
    {"gloo-timeout-seconds", "HOROVOD_GLOO_TIMEOUT_SECONDS", Kind::kCount, Needs::kNothing},
    {"log-level", "HOROVOD_LOG_LEVEL", Kind::kLevel, Needs::kNothing},
    // horovodrun maps --log-with-timestamp to HOROVOD_LOG_HIDE_TIME=1, the opposite of what
    // both names say; ferry exports what the flag says: hide the time without timestamps.
    {"log-without-timestamp", "HOROVOD_LOG_HIDE_TIME", Kind::kOnOff, Needs::kNothing},
};

Result<std::string> checked(const Tunable& t, const std::string& value) {
  auto bad = [&](const char* expected) {
    return make_error("--" + std::string(t.flag) + ": bad value '" + value + "' (expected " +
                      expected + ")");
  };
  switch (t.kind) {
    case Kind::kCount:
      if (!parse_int(value, 0, 1'000'000'000)) return bad("an integer >= 0");
      return value;
    case Kind::kMb: {
      auto mb = parse_int(value, 0, 1'000'000'000);
      if (!mb) return bad("an integer >= 0");
      return std::to_string(*mb * 1024 * 1024);
    }
    case Kind::kNumber:
      if (!parse_number(value, 0, 1e12)) return bad("a number >= 0");
      return value;
    case Kind::kNoise:
      if (!parse_number(value, 0, 1)) return bad("a number in [0, 1]");
      return value;
    case Kind::kLevel: {
      std::string up = value;
      for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      for (const char* l : {"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"})
        if (up == l) return up;
      return bad("TRACE, DEBUG, INFO, WARNING, ERROR or FATAL");
    }
    case Kind::kText:
      if (value.empty()) return bad("a non-empty value");
      return value;
    case Kind::kOnOff:
      return value;
  }
  return value;
}

bool starts_with(const char* s, const char* prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

Result<std::vector<std::string>> horovod_tunables_env(
    const std::map<std::string, std::string>& flags, std::vector<std::string>& warnings) {
  auto on = [&flags](const char* key) {
    auto it = flags.find(key);
    return it != flags.end() && it->second == "1";
  };
  const bool autotune = on("autotune");
  const bool timeline = flags.contains("timeline-filename");
  std::vector<std::string> env;
  for (const Tunable& t : tunables) {
    auto it = flags.find(t.flag);
    if (it == flags.end()) continue;
    auto value = checked(t, it->second);
    if (!value) return value.error();
    if (t.needs == Needs::kAutotune && !autotune) {
      if (std::string(t.flag) != "autotune")
        warnings.push_back("--" + std::string(t.flag) + " has no effect without --autotune");
      continue;
    }
    if (t.needs == Needs::kTimeline && !timeline) {
      warnings.push_back("--" + std::string(t.flag) + " has no effect without --timeline-filename");
      continue;
    }
    if (std::string(t.flag) == "tcp" && *value != "1") continue;
    env.push_back(std::string(t.env) + "=" + *value);
  }
  return env;
}

std::vector<std::string> forwarded_environment(char** environ_list) {
  static const char* const session[] = {"HOME",
                                        "USER",
                                        "LOGNAME",
                                        "SHELL",
                                        "MAIL",
                                        "HOSTNAME",
                                        "PWD",
                                        "OLDPWD",
                                        "SHLVL",
                                        "_",
                                        "DISPLAY",
                                        "XAUTHORITY",
                                        "TMUX",
                                        "TMUX_PANE",
                                        "STY",
                                        "WINDOW",
                                        "DBUS_SESSION_BUS_ADDRESS",
                                        "HOROVOD_SECRET_KEY",
                                        "MOTD_SHOWN",
                                        "PS1",
                                        "PROMPT_COMMAND"};
  static const char* const prefixes[] = {"BASH_FUNC_", "SSH_", "XDG_", "FERRY_"};
  std::vector<std::string> out;
  for (char** e = environ_list; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string name = kv.substr(0, eq);
    bool ident = !std::isdigit(static_cast<unsigned char>(name[0]));
    for (char c : name) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ident || ends_with(name, "CUDA_VISIBLE_DEVICES")) continue;
    bool skip = false;
    for (const char* s : session) skip = skip || name == s;
    for (const char* p : prefixes) skip = skip || starts_with(name.c_str(), p);
    if (!skip) out.push_back(std::move(kv));
  }
  return out;
}

}  // namespace ferry::cli_detail
