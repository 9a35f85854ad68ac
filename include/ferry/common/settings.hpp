#pragma once
/// \file
/// ferry's FERRY_* environment settings, read once where ferryrun and ferryd start (their
/// main) and passed down from there: no code below main() reads them with getenv. Two tune
/// ferryrun, one ferryd; the FERRY_TEST_* ones are test hooks that point ferryd at fake system
/// files. (The variables ferry sets for its own processes, FERRY_JOB_SECRET, FERRY_CONNECT_*
/// and FERRY_JOB_TAG, are not settings: each is read where it is defined.)

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ferry {

struct Settings {
  /// FERRY_SSH_IO_THREADS=N (ferryrun): the SSH sessions on N threads of their own, -1 on the
  /// loop; unset: chosen by the CPU count.
  std::optional<int> ssh_io_threads;
  /// FERRY_OUTPUT_ROUTE=ssh (ferryrun): every host's output stays on its SSH channel.
  bool output_on_ssh = false;
  /// FERRY_OUTPUT_COPY=1 (ferryd): rank output is copied through ferryd, not spliced (kernels
  /// that refuse splice on these fds; tests of the copying path).
  bool output_copy = false;
  /// FERRY_TEST_DEVICE_ROOT (ferryd, tests): the root under which accelerators, CPU quotas and
  /// the rest of /proc, /dev and /sys are read, instead of "/".
  std::string device_root = "/";
  /// FERRY_TEST_SYSFS_NET (ferryd, tests): read instead of /sys/class/net for the interfaces'
  /// link speeds and types.
  std::string sysfs_net = "/sys/class/net";
};

/// The program whose settings are read: each reads (and warns about) only its own, so that a
/// bad FERRY_SSH_IO_THREADS is reported once, by ferryrun, not again by a local ferryd.
enum class SettingsOf { kFerryrun, kFerryd };

/// Reads `who`'s settings through `lookup` (getenv, or a test's); the others keep their
/// defaults. A value that cannot be used is left at its default, with one line in `warnings`:
/// a typo must not pass for a setting.
Settings read_settings(const std::function<const char*(const char*)>& lookup, SettingsOf who,
                       std::vector<std::string>& warnings);

}  // namespace ferry
