// Shipping ferryd: the files ferryrun holds, and the shell program a host runs to pick or
// receive one. The program needs only POSIX sh and coreutils (sha256sum, head, stat, mktemp,
// sync, mv), which every Debian or Ubuntu image with sshd has.

#include "ferry/transport/ferryd_shipment.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include "ferry/common/read_text_file.hpp"
#include "ferry/transport/ssh_launcher.hpp"
#include "libcrypto.hpp"

namespace ferry {

/// The bytes of a ShippedFerryd once read (or why they could not be), shared by the
/// sessions of every host.
struct ShippedBytes {
  std::mutex mu;
  std::optional<std::string> raw, gzip;
  std::string raw_error, gzip_error;
};

namespace {

constexpr size_t kMaxFerrydBytes = size_t{256} << 20;

// $1 mode, $2 the configured ferryd, $3 the protocol version, then one "arch sha256 size
// gzsize" quad per file (gzsize 0: no gzip copy). Answers "use PATH" or "cached PATH" and
// then becomes that ferryd (exec PATH --stdio: its output follows the line on the same
// channel), or "send ARCH gz|raw" (then reads exactly gzsize or size bytes and answers
// again; gz where the host has gzip, which every Debian and Ubuntu has), "arch ARCH" or
// "fail WHY", one line each. A copy is received under a temporary name in the cache
// folder, its SHA-256 checked, fsynced and renamed over the old one, so that a job on
// another host sharing the home never starts a half-written file; then `ferryd.ok` records
// its size, mtime and inode. A later job trusts a copy that still matches that record (the
// folder is private to the user, as an installed ferryd's would be) and checks the SHA-256
// again only where it does not (26 ms for 3 MB on a small host: most of a job's start).
// The common path (a cached copy) runs two programs, uname (which, unlike
// /proc/sys/kernel/arch, answers as the personality says: setarch, linux32) and one stat
// for the folders and the file: every fork and exec costs a host about 2 ms, which 32
// hosts on 2 CPUs add up.
// A home that cannot take it (read-only, full) falls back to /tmp/ferry-<uid>; a folder
// that another user owns or may write to is refused, never used.
constexpr const char* kProgram = R"SH(set -u
m=$1 p=$2 v=$3; shift 3
start() { echo "$1 $2"; exec "$2" --stdio; }
if [ "$m" = auto ] && [ -f "$p" ] && [ -x "$p" ]; then
  case $("$p" --version </dev/null 2>/dev/null) in *"(protocol $v)"*) start use "$p";; esac
fi
a=$(uname -m) h= n= z=0 e=raw
while [ $# -ge 4 ]; do [ "$1" = "$a" ] && h=$2 n=$3 z=$4; shift 4; done
[ -n "$h" ] || { echo "arch $a"; exit 0; }
[ "$z" -gt 0 ] && command -v gzip >/dev/null 2>&1 && e=gz n=$z
u= why= bad= f=
uid() { [ -n "$u" ] || u=$(id -u); }
sum() { s=$(sha256sum <"$1" 2>/dev/null) && echo "${s%% *}"; }
record() { stat -c '%s:%Y:%i' "$d/ferryd" >"$d/.ok.$$" 2>/dev/null &&
           mv -f "$d/.ok.$$" "$d/ferryd.ok" 2>/dev/null || rm -f "$d/.ok.$$" 2>/dev/null; }
place() {
  [ -d "$1/$h" ] || (umask 077; mkdir -p "$1/$h") 2>/dev/null ||
    { why="cannot create $1/$h"; return 1; }
  b=$1; s=$(stat -c '%A %s:%Y:%i' "$b" "$b/$h" "$b/$h/ferryd" 2>/dev/null)
  set -- $s
  [ $# -ge 4 ] || { why="cannot stat $b/$h"; return 1; }
  f=${6:-}
  for d in "$b" "$b/$h"; do
    case $1 in d????-??-?) [ -O "$d" ] || bad=1;; *) bad=1;; esac
    if [ -n "$bad" ]; then
      uid; o=$(stat -c '%u:%A' "$d" 2>/dev/null)
      why="refusing cache folder $d: not private to user $u (owner:mode $o; make it 0700 and yours)"
      return 1
    fi
    shift 2
  done
  d=$b/$h
}
known() {
  [ -f "$d/ferryd" ] || return 1
  k= && { read -r k <"$d/ferryd.ok"; } 2>/dev/null && [ "$k" = "$f" ] && return 0
  [ "$(sum "$d/ferryd")" = "$h" ] && record
}
take() {
  t=$(mktemp "$d/.ferryd.XXXXXX" 2>/dev/null) || { why="cannot write in $d"; return 1; }
  echo "send $a $e"
  if ! head -c "$n" | { if [ $e = gz ]; then gzip -dc; else cat; fi >"$t" 2>/dev/null ||
                        { cat >/dev/null; false; }; }; then
    rm -f "$t"; why="cannot write $d/ferryd (full or read-only?)"; return 1
  fi
  if [ "$(sum "$t")" != "$h" ]; then
    rm -f "$t"; why="the ferryd received is not the one sent (its SHA-256 differs)"; bad=1; return 1
  fi
  chmod 700 "$t" && sync "$t" && mv -f "$t" "$d/ferryd" ||
    { rm -f "$t"; why="cannot write $d/ferryd"; return 1; }
  sync "$d" 2>/dev/null; record; start use "$d/ferryd"
}
c=${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/ferry
for b in "$c" ""; do
  [ -n "$b" ] || { uid; b=/tmp/ferry-$u; }
  place "$b" || { [ -n "$bad" ] && break; continue; }
  known && start cached "$d/ferryd"
  take && exit 0
  [ -n "$bad" ] && break
done
echo "fail $why"
)SH";

std::string machine_arch() {
  utsname u{};
  if (::uname(&u) != 0) return "x86_64";
  return u.machine;
}

Result<std::string> hex_sha256(const std::string& bytes, const std::string& source) {
  const auto& crypto = libcrypto::get();
  if (!crypto.sha256_digest)
    return make_error(source + ": cannot compute its SHA-256 (libcrypto.so.3 not found)");
  std::array<unsigned char, 32> md{};
  crypto.sha256_digest(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                       md.data());
  std::string out;
  char two[3];
  for (unsigned char c : md) {
    std::snprintf(two, sizeof two, "%02x", c);
    out += two;
  }
  return out;
}

bool newer_or_same(const struct stat& a, const struct stat& b) {
  return a.st_mtim.tv_sec > b.st_mtim.tv_sec ||
         (a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec >= b.st_mtim.tv_nsec);
}

// The first `n` bytes of `path` ("" when it cannot be read).
std::string head_bytes(const std::string& path, size_t n) {
  std::string out(n, '\0');
  FILE* f = std::fopen(path.c_str(), "rbe");
  if (!f) return {};
  out.resize(std::fread(out.data(), 1, n, f));
  std::fclose(f);
  return out;
}

// The SHA-256 the build wrote beside `path` (`<path>.sha256`, 64 hex digits), when it is at
// least as new as the file; "" otherwise.
std::string recorded_sha256(const std::string& path, const struct stat& file) {
  struct stat st {};
  if (::stat((path + ".sha256").c_str(), &st) != 0 || !newer_or_same(st, file)) return {};
  std::string text = head_bytes(path + ".sha256", 64);
  if (text.size() != 64 || text.find_first_not_of("0123456789abcdef") != std::string::npos)
    return {};
  return text;
}

Result<ShippedFerryd> load_file(const std::string& arch, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return make_error(path + ": cannot read: " + std::strerror(errno), errno);
  if (!S_ISREG(st.st_mode)) return make_error(path + ": cannot read: not a file");
  if (static_cast<uint64_t>(st.st_size) > kMaxFerrydBytes)
    return make_error(path + ": cannot read: larger than 256 MiB, not a ferryd");
  if (head_bytes(path, 4) !=
      "\x7f"
      "ELF")
    return make_error(path + ": not a ferryd (no ELF header)");
  ShippedFerryd f;
  f.arch = arch;
  f.source = path;
  f.size = static_cast<uint64_t>(st.st_size);
  f.loaded = std::make_shared<ShippedBytes>();
  f.sha256 = recorded_sha256(path, st);
  if (f.sha256.empty()) {  // no record from the build: read and hash it now
    auto bytes = read_text_file(path, kMaxFerrydBytes, "ferryd");
    if (!bytes) return bytes.error();
    auto sum = hex_sha256(*bytes, path);
    if (!sum) return sum.error();
    f.sha256 = std::move(*sum);
    f.size = bytes->size();
    f.loaded->raw = std::move(*bytes);
  }
  struct stat g {};
  const std::string gz = path + ".gz";
  if (::stat(gz.c_str(), &g) == 0 && S_ISREG(g.st_mode) && newer_or_same(g, st) &&
      head_bytes(gz, 2) == "\x1f\x8b")
    f.gzip_size = static_cast<uint64_t>(g.st_size);
  return f;
}

// Every ferryd-<arch> of `dir`.
Result<std::vector<ShippedFerryd>> load_folder(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return make_error("--ferryd-dir " + dir + ": cannot read the folder");
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.starts_with("ferryd-") && name.size() > 7 && !name.ends_with(".gz") &&
        !name.ends_with(".sha256"))
      names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  std::vector<ShippedFerryd> out;
  for (const auto& name : names) {
    auto f = load_file(name.substr(7), dir + "/" + name);
    if (!f) return f.error();
    out.push_back(std::move(*f));
  }
  if (out.empty())
    return make_error("--ferryd-dir " + dir + ": no ferryd-<arch> file (ferryd-x86_64, ...)");
  return out;
}

}  // namespace

Result<const std::string*> ShippedFerryd::contents(bool gzip) const {
  std::lock_guard lock(loaded->mu);
  std::optional<std::string>& slot = gzip ? loaded->gzip : loaded->raw;
  std::string& error = gzip ? loaded->gzip_error : loaded->raw_error;
  if (slot) return &*slot;
  if (!error.empty()) return make_error(error);
  const std::string path = gzip ? source + ".gz" : source;
  auto bytes = read_text_file(path, kMaxFerrydBytes, "ferryd");
  if (!bytes) {
    error = bytes.error().message;
  } else if (bytes->size() != (gzip ? gzip_size : size)) {
    error = path + ": changed while ferryrun ran (its size differs); run the job again";
  } else if (!gzip) {
    auto sum = hex_sha256(*bytes, path);
    if (!sum)
      error = sum.error().message;
    else if (*sum != sha256)
      error = path + ": its SHA-256 is not the one in " + path +
              ".sha256 (a stale record: rebuild, or delete the .sha256)";
  }
  if (!error.empty()) return make_error(error);
  slot = std::move(*bytes);
  return &*slot;
}

ShippedFerryd ShippedFerryd::in_memory(std::string arch, std::string sha256, std::string bytes,
                                       std::string gzip) {
  ShippedFerryd f;
  f.arch = std::move(arch);
  f.source = "(memory)";
  f.sha256 = std::move(sha256);
  f.size = bytes.size();
  f.gzip_size = gzip.size();
  f.loaded = std::make_shared<ShippedBytes>();
  f.loaded->raw = std::move(bytes);
  if (!gzip.empty()) f.loaded->gzip = std::move(gzip);
  return f;
}

const ShippedFerryd* ShipPlan::find(std::string_view arch) const {
  for (const auto& f : files)
    if (f.arch == arch) return &f;
  return nullptr;
}

Result<ShipPlan> load_ship_plan(ShipMode mode, int protocol, const std::string& ferryd_dir,
                                const std::string& self_dir) {
  ShipPlan plan;
  plan.mode = mode;
  plan.protocol = protocol;
  if (mode == ShipMode::kNever) return plan;
  if (!ferryd_dir.empty()) {
    auto files = load_folder(ferryd_dir);
    if (!files) return files.error();
    plan.files = std::move(*files);
  }
  const std::string arch = machine_arch();
  if (plan.find(arch)) return plan;
  std::string path = self_dir + "/../libexec/ferry/ferryd-" + arch;
  if (::access(path.c_str(), R_OK) != 0) path = self_dir + "/ferryd";
  auto own = load_file(arch, path);
  if (!own) return make_error("--ship-ferryd: " + own.error().message);
  plan.files.push_back(std::move(*own));
  return plan;
}

std::string ship_command(const ShipPlan& plan, const std::string& installed, bool installed_tried) {
  const bool look = plan.mode == ShipMode::kAuto && !installed_tried;
  std::string cmd = "sh -c " + shell_quote(kProgram) + " ferry-ship " + (look ? "auto" : "always") +
                    " " + shell_quote(installed) + " " + std::to_string(plan.protocol);
  for (const auto& f : plan.files)
    cmd += " " + shell_quote(f.arch) + " " + f.sha256 + " " + std::to_string(f.size) + " " +
           std::to_string(f.gzip_size);
  return cmd;
}

Result<ShipLine> parse_ship_line(std::string_view line) {
  static constexpr std::array<std::pair<std::string_view, ShipLine::Kind>, 5> kWords{{
      {"use ", ShipLine::Kind::kUse},
      {"cached ", ShipLine::Kind::kCached},
      {"send ", ShipLine::Kind::kSend},
      {"arch ", ShipLine::Kind::kWrongArch},
      {"fail ", ShipLine::Kind::kFail},
  }};
  for (const auto& [word, kind] : kWords)
    if (line.starts_with(word)) return ShipLine{kind, std::string(line.substr(word.size()))};
  return make_error("unexpected answer while looking for ferryd: '" + std::string(line) + "'");
}

std::string wrong_arch_message(const ShipPlan& plan, const std::string& arch) {
  std::string have;
  for (const auto& f : plan.files) have += (have.empty() ? "" : ", ") + f.arch;
  return "the host is " + arch + " and ferryrun holds a ferryd for " + have +
         " only; give --ferryd-dir DIR with a ferryd-" + arch + " in it";
}

}  // namespace ferry
