// A Python rank's frames read from its memory (see python_frames.hpp). The offsets are
// CPython 3.11's on x86-64 and aarch64 (LP64), read with gdb from Debian's python3.11 debug
// symbols (`print &((PyThreadState*)0)->cframe` and so on); the location table's format is
// CPython's Objects/locations.md for 3.11.

#include "ferry/daemon/python_frames.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ferry/common/posix_handles.hpp"

namespace ferry {
namespace {

// CPython 3.11's layout (LP64).
namespace py311 {
constexpr uint64_t kRuntimeInterpretersMain = 0x30;  // _PyRuntime.interpreters.main
constexpr uint64_t kRuntimeMainThread = 0x50;        // _PyRuntime.main_thread (pthread_t)
constexpr uint64_t kInterpThreadsHead = 0x10;        // PyInterpreterState.threads.head
constexpr uint64_t kThreadNext = 0x08;               // PyThreadState.next
constexpr uint64_t kThreadCframe = 0x38;             // PyThreadState.cframe
constexpr uint64_t kThreadId = 0x98;                 // PyThreadState.thread_id
constexpr uint64_t kCframeCurrentFrame = 0x08;       // _PyCFrame.current_frame
constexpr uint64_t kFrameCode = 0x20;                // _PyInterpreterFrame.f_code
constexpr uint64_t kFramePrevious = 0x30;            // _PyInterpreterFrame.previous
constexpr uint64_t kFramePrevInstr = 0x38;           // _PyInterpreterFrame.prev_instr
constexpr uint64_t kCodeFirstLine = 0x48;            // PyCodeObject.co_firstlineno
constexpr uint64_t kCodeFilename = 0x70;             // PyCodeObject.co_filename
constexpr uint64_t kCodeName = 0x78;                 // PyCodeObject.co_name
constexpr uint64_t kCodeLinetable = 0x88;            // PyCodeObject.co_linetable
constexpr uint64_t kCodeInstructions = 0xb8;         // PyCodeObject.co_code_adaptive
constexpr uint64_t kVarSize = 0x10;                  // PyVarObject.ob_size, PyASCIIObject.length
constexpr uint64_t kBytesData = 0x20;                // PyBytesObject.ob_sval
constexpr uint64_t kStrState = 0x20;                 // PyASCIIObject.state
constexpr uint64_t kStrAsciiData = 48;               // sizeof(PyASCIIObject)
constexpr uint64_t kStrCompactData = 72;             // sizeof(PyCompactUnicodeObject)
}  // namespace py311

constexpr size_t kMaxThreads = 4096;
constexpr size_t kMaxText = 4096;
constexpr size_t kMaxLinetable = size_t{1} << 20;

class Memory {
 public:
  explicit Memory(pid_t pid) : pid_(pid) {}
  bool read(uint64_t addr, void* out, size_t n) const {
    if (addr == 0) return false;
    iovec local{out, n};
    iovec remote{reinterpret_cast<void*>(addr), n};  // NOLINT(performance-no-int-to-ptr)
    return ::process_vm_readv(pid_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
  }
  template <class T>
  bool get(uint64_t addr, T& out) const {
    return read(addr, &out, sizeof out);
  }
  uint64_t pointer(uint64_t addr) const {
    uint64_t p = 0;
    return get(addr, p) ? p : 0;
  }

 private:
  pid_t pid_;
};

void append_utf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// A str object's text (compact strings: every name and file name of a code object is one).
std::string read_str(const Memory& mem, uint64_t obj) {
  int64_t length = 0;
  uint32_t state = 0;
  if (!mem.get(obj + py311::kVarSize, length) || !mem.get(obj + py311::kStrState, state) ||
      length < 0)
    return "?";
  const unsigned kind = (state >> 2) & 7;
  const bool compact = ((state >> 5) & 1) != 0;
  const bool ascii = ((state >> 6) & 1) != 0;
  if (!compact || (kind != 1 && kind != 2 && kind != 4)) return "?";
  const auto n = static_cast<size_t>(std::min<int64_t>(length, kMaxText));
  std::vector<unsigned char> raw(n * kind);
  if (!raw.empty() && !mem.read(obj + (ascii ? py311::kStrAsciiData : py311::kStrCompactData),
                                raw.data(), raw.size()))
    return "?";
  std::string text;
  for (size_t i = 0; i < n; ++i) {
    uint32_t c = 0;
    std::memcpy(&c, raw.data() + i * kind, kind);  // little-endian: the low bytes first
    append_utf8(text, c);
  }
  return text;
}

struct Found {
  std::string path;    // the file that defines _PyRuntime, as mapped
  uint64_t start = 0;  // where its first mapping (file offset 0) begins
};

// The files among the process's mappings that may hold the interpreter: python3.11 itself and
// libpython3.11 (an interpreter built with --enable-shared keeps _PyRuntime there).
Result<std::vector<Found>> find_interpreter(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  if (!maps) return make_error("cannot read /proc/" + std::to_string(pid) + "/maps");
  std::vector<Found> found;
  for (std::string line; std::getline(maps, line);) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    if (!(in >> range >> perms >> offset >> dev >> inode >> path)) continue;
    const std::string base = path.substr(path.rfind('/') + 1);
    if (!base.starts_with("python3.11") && !base.starts_with("libpython3.11")) continue;
    if (offset.find_first_not_of('0') != std::string::npos) continue;
    found.push_back({path, std::stoull(range.substr(0, range.find('-')), nullptr, 16)});
  }
  if (found.empty())
    return make_error("not CPython 3.11 (the state report reads only 3.11's frames without gdb)");
  return found;
}

struct Symbols {
  uint64_t runtime = 0;     // _PyRuntime's address in the file
  uint64_t first_load = 0;  // the vaddr of the PT_LOAD at file offset 0
  bool shared = false;      // ET_DYN: loaded at a bias
};

template <class T>
bool pread_all(int fd, T* out, size_t count, uint64_t at) {
  const size_t n = sizeof(T) * count;
  return ::pread(fd, out, n, static_cast<off_t>(at)) == static_cast<ssize_t>(n);
}

// _PyRuntime in the file's symbols (exported for extensions and debuggers).
Result<Symbols> read_symbols(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return make_error("cannot open " + path + ": " + std::strerror(errno));
  Elf64_Ehdr eh{};
  if (!pread_all(fd.get(), &eh, 1, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_phentsize != sizeof(Elf64_Phdr))
    return make_error(path + " is not a 64-bit ELF file");
  Symbols s;
  s.shared = eh.e_type == ET_DYN;
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!pread_all(fd.get(), ph.data(), ph.size(), eh.e_phoff))
    return make_error(path + ": cannot read its program headers");
  for (const auto& p : ph)
    if (p.p_type == PT_LOAD && p.p_offset == 0) s.first_load = p.p_vaddr;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  if (!pread_all(fd.get(), sh.data(), sh.size(), eh.e_shoff))
    return make_error(path + ": cannot read its section headers");
  // The dynamic symbols first; an interpreter built without exporting them (pyenv's, say)
  // may still have its full symbol table.
  std::vector<const Elf64_Shdr*> tables;
  for (const auto& sec : sh)
    if (sec.sh_type == SHT_DYNSYM)
      tables.insert(tables.begin(), &sec);
    else if (sec.sh_type == SHT_SYMTAB)
      tables.push_back(&sec);
  for (const Elf64_Shdr* table : tables) {
    const Elf64_Shdr& sec = *table;
    if (sec.sh_link >= sh.size()) continue;
    const Elf64_Shdr& strtab = sh[sec.sh_link];
    std::vector<Elf64_Sym> syms(sec.sh_size / sizeof(Elf64_Sym));
    std::string names(strtab.sh_size, '\0');
    if (!pread_all(fd.get(), syms.data(), syms.size(), sec.sh_offset) ||
        !pread_all(fd.get(), names.data(), names.size(), strtab.sh_offset))
      return make_error(path + ": cannot read its symbols");
    for (const auto& sym : syms)
      if (sym.st_name < names.size() &&
          std::strcmp(names.c_str() + sym.st_name, "_PyRuntime") == 0 && sym.st_value != 0) {
        s.runtime = sym.st_value;
        return s;
      }
  }
  return make_error(path + " exports no _PyRuntime");
}

// The main thread's state: the thread state whose thread id is the runtime's main thread,
// else the oldest (the list's last).
uint64_t main_thread_state(const Memory& mem, uint64_t runtime) {
  const uint64_t interp = mem.pointer(runtime + py311::kRuntimeInterpretersMain);
  uint64_t main_id = 0;
  mem.get(runtime + py311::kRuntimeMainThread, main_id);
  uint64_t last = 0;
  uint64_t ts = mem.pointer(interp + py311::kInterpThreadsHead);
  for (size_t i = 0; ts != 0 && i < kMaxThreads; ++i) {
    uint64_t id = 0;
    if (mem.get(ts + py311::kThreadId, id) && id == main_id) return ts;
    last = ts;
    ts = mem.pointer(ts + py311::kThreadNext);
  }
  return last;
}

// Reads an unsigned varint of the location table (6 bits a byte, 0x40: more follow).
uint64_t read_varint(std::string_view t, size_t& at) {
  uint64_t v = 0;
  unsigned shift = 0;
  while (at < t.size() && shift < 64) {
    const auto b = static_cast<unsigned char>(t[at++]);
    v |= static_cast<uint64_t>(b & 0x3F) << shift;
    shift += 6;
    if ((b & 0x40) == 0) break;
  }
  return v;
}

int64_t read_svarint(std::string_view t, size_t& at) {
  const uint64_t v = read_varint(t, at);
  return (v & 1) != 0 ? -static_cast<int64_t>(v >> 1) : static_cast<int64_t>(v >> 1);
}

}  // namespace

int python311_line(std::string_view linetable, int first_line, int64_t index) {
  const std::string_view t = linetable;
  if (index < 0) return first_line;
  int64_t line = first_line;
  int64_t addr = 0;
  size_t at = 0;
  while (at < t.size()) {
    const auto head = static_cast<unsigned char>(t[at++]);
    const unsigned code = (head >> 3) & 15;
    const int64_t length = (head & 7) + 1;
    bool has_line = true;
    if (code == 15) {  // no location
      has_line = false;
    } else if (code == 14) {  // long form: line delta, end line delta, columns
      line += read_svarint(t, at);
      read_varint(t, at);
      read_varint(t, at);
      read_varint(t, at);
    } else if (code == 13) {  // no column: line delta
      line += read_svarint(t, at);
    } else if (code >= 10) {  // one-line form: delta code-10, start and end column
      line += code - 10;
      at += 2;
    } else {  // short form: same line, one column byte
      at += 1;
    }
    if (index < addr + length) return has_line ? static_cast<int>(line) : 0;
    addr += length;
  }
  return 0;
}

Result<std::vector<PythonFrame>> read_python_frames(pid_t pid, size_t max_frames) {
  auto found = find_interpreter(pid);
  if (!found) return found.error();
  Result<Symbols> syms = make_error("");
  uint64_t start = 0;
  for (const Found& f : *found) {
    // The file as the process sees it (a container's own root included).
    syms = read_symbols("/proc/" + std::to_string(pid) + "/root" + f.path);
    if (!syms) syms = read_symbols(f.path);
    start = f.start;
    if (syms) break;
  }
  if (!syms) return syms.error();
  const uint64_t bias = syms->shared ? start - (syms->first_load & ~uint64_t{0xFFF}) : 0;
  const Memory mem(pid);
  const uint64_t runtime = bias + syms->runtime;
  if (uint64_t probe = 0; !mem.get(runtime, probe))
    return make_error("cannot read pid " + std::to_string(pid) +
                      "'s memory: " + std::strerror(errno) + " (no ptrace right over it?)");
  const uint64_t ts = main_thread_state(mem, runtime);
  if (ts == 0)
    return make_error("no Python thread (the interpreter is not running yet or any more)");
  std::vector<PythonFrame> frames;
  uint64_t frame = mem.pointer(mem.pointer(ts + py311::kThreadCframe) + py311::kCframeCurrentFrame);
  while (frame != 0 && frames.size() < max_frames) {
    const uint64_t code = mem.pointer(frame + py311::kFrameCode);
    if (code == 0) return make_error("a frame without code: not 3.11's layout?");
    PythonFrame f;
    f.file = read_str(mem, mem.pointer(code + py311::kCodeFilename));
    f.function = read_str(mem, mem.pointer(code + py311::kCodeName));
    int first = 0;
    mem.get(code + py311::kCodeFirstLine, first);
    const uint64_t table = mem.pointer(code + py311::kCodeLinetable);
    int64_t size = 0;
    std::string bytes;
    if (mem.get(table + py311::kVarSize, size) && size > 0 &&
        static_cast<size_t>(size) <= kMaxLinetable) {
      bytes.resize(static_cast<size_t>(size));
      if (!mem.read(table + py311::kBytesData, bytes.data(), bytes.size())) bytes.clear();
    }
    const uint64_t prev = mem.pointer(frame + py311::kFramePrevInstr);
    const int64_t index =
        (static_cast<int64_t>(prev) - static_cast<int64_t>(code + py311::kCodeInstructions)) / 2;
    f.line = python311_line(bytes, first, index);
    frames.push_back(std::move(f));
    frame = mem.pointer(frame + py311::kFramePrevious);
  }
  return frames;
}

std::string format_python_frames(const std::vector<PythonFrame>& frames) {
  std::string out = "Traceback (most recent call first):\n";
  for (const auto& f : frames)
    out +=
        "  File \"" + f.file + "\", line " + std::to_string(f.line) + ", in " + f.function + "\n";
  return out;
}

}  // namespace ferry
