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
#include <cstdio>

#include "ferry/common/read_text_file.hpp"
#include "ferry/transport/ssh_launcher.hpp"
#include "libcrypto.hpp"

namespace ferry {
namespace {

constexpr size_t kMaxFerrydBytes = size_t{256} << 20;

// $1 mode, $2 the configured ferryd, $3 the protocol version, then one "arch sha256 size
// gzsize" quad per file (gzsize 0: no gzip copy). Answers "use PATH", "cached PATH",
// "send ARCH gz|raw" (then reads exactly gzsize or size bytes and answers again; gz where
// the host has gzip, which every Debian and Ubuntu has), "arch ARCH" or "fail WHY", one
// line each. A copy is received
// under a temporary name in the cache folder, checked, fsynced and renamed over the old
// one, so that a job on another host sharing the home never starts a half-written file.
// A home that cannot take it (read-only, full) falls back to /tmp/ferry-<uid>; a folder
// that another user owns or may write to is refused, never used.
constexpr const char* kProgram = R"SH(set -u
m=$1 p=$2 v=$3; shift 3
if [ "$m" = auto ] && [ -f "$p" ] && [ -x "$p" ]; then
  case $("$p" --version </dev/null 2>/dev/null) in *"(protocol $v)"*) echo "use $p"; exit 0;; esac
fi
a=$(uname -m) h= n= z=0 e=raw
while [ $# -ge 4 ]; do [ "$1" = "$a" ] && h=$2 n=$3 z=$4; shift 4; done
[ -n "$h" ] || { echo "arch $a"; exit 0; }
[ "$z" -gt 0 ] && command -v gzip >/dev/null 2>&1 && e=gz n=$z
u=$(id -u) why= bad=
sum() { s=$(sha256sum <"$1" 2>/dev/null) && echo "${s%% *}"; }
place() {
  [ -d "$1/$h" ] || (umask 077; mkdir -p "$1/$h") 2>/dev/null ||
    { why="cannot create $1/$h"; return 1; }
  b=$1; s=$(stat -c '%u:%A' "$b" "$b/$h" 2>/dev/null) || { why="cannot stat $b/$h"; return 1; }
  set -- $s
  for d in "$b" "$b/$h"; do
    case $1 in "$u":d????-??-?) ;; *)
      why="refusing cache folder $d: not private to user $u (owner:mode $1; make it 0700 and yours)"
      bad=1; return 1;;
    esac
    shift
  done
  d=$b/$h
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
  sync "$d" 2>/dev/null; echo "use $d/ferryd"
}
c=${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/ferry
for b in "$c" "/tmp/ferry-$u"; do
  place "$b" || { [ -n "$bad" ] && break; continue; }
  if [ -f "$d/ferryd" ] && [ "$(sum "$d/ferryd")" = "$h" ]; then echo "cached $d/ferryd"; exit 0; fi
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

// The build's gzip copy of `raw` (a third of its size), when there is one at least as new.
std::shared_ptr<const std::string> load_gzip(const std::string& gz, const std::string& raw) {
  struct stat g {
  }, r{};
  if (::stat(gz.c_str(), &g) != 0 || ::stat(raw.c_str(), &r) != 0 || g.st_mtime < r.st_mtime)
    return nullptr;
  auto bytes = read_text_file(gz, kMaxFerrydBytes, "gzip file");
  if (!bytes || bytes->size() < 2 || bytes->compare(0, 2, "\x1f\x8b") != 0) return nullptr;
  return std::make_shared<const std::string>(std::move(*bytes));
}

Result<ShippedFerryd> load_file(const std::string& arch, const std::string& path) {
  auto bytes = read_text_file(path, kMaxFerrydBytes, "ferryd");
  if (!bytes) return bytes.error();
  if (bytes->size() < 4 || bytes->compare(0, 4,
                                          "\x7f"
                                          "ELF") != 0)
    return make_error(path + ": not a ferryd (no ELF header)");
  auto sum = hex_sha256(*bytes, path);
  if (!sum) return sum.error();
  ShippedFerryd f;
  f.arch = arch;
  f.source = path;
  f.sha256 = std::move(*sum);
  f.bytes = std::make_shared<const std::string>(std::move(*bytes));
  f.gzip = load_gzip(path + ".gz", path);
  return f;
}

// Every ferryd-<arch> of `dir`.
Result<std::vector<ShippedFerryd>> load_folder(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return make_error("--ferryd-dir " + dir + ": cannot read the folder");
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.starts_with("ferryd-") && name.size() > 7 && !name.ends_with(".gz"))
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

std::string ship_command(const ShipPlan& plan, const std::string& installed) {
  std::string cmd = "sh -c " + shell_quote(kProgram) + " ferry-ship " +
                    (plan.mode == ShipMode::kAlways ? "always" : "auto") + " " +
                    shell_quote(installed) + " " + std::to_string(plan.protocol);
  for (const auto& f : plan.files)
    cmd += " " + shell_quote(f.arch) + " " + f.sha256 + " " + std::to_string(f.bytes->size()) +
           " " + std::to_string(f.gzip ? f.gzip->size() : 0);
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
