// The parts of an MPMD line, and appfiles: the options each part may carry, in mpirun's
// and hydra's spellings, and nothing else.

#include "ferry/mpmd/app_line.hpp"

#include <algorithm>
#include <array>

#include "ferry/common/read_text_file.hpp"
#include "ferry/common/text.hpp"

namespace ferry {
namespace {

// What a part's option sets. One table for both families: their spellings never mean two
// things.
enum class PartOption { kNp, kHosts, kExport, kEnv, kWdir, kPerHost };

struct Spelling {
  const char* name;
  PartOption option;
};

constexpr std::array kSpellings = {
    Spelling{"-np", PartOption::kNp},
    Spelling{"--np", PartOption::kNp},
    Spelling{"-n", PartOption::kNp},
    Spelling{"--n", PartOption::kNp},
    Spelling{"-c", PartOption::kNp},
    Spelling{"-H", PartOption::kHosts},
    Spelling{"--host", PartOption::kHosts},
    Spelling{"-host", PartOption::kHosts},
    Spelling{"-hosts", PartOption::kHosts},
    Spelling{"--hosts", PartOption::kHosts},
    Spelling{"-x", PartOption::kExport},
    Spelling{"-env", PartOption::kEnv},
    Spelling{"--env", PartOption::kEnv},
    Spelling{"--wdir", PartOption::kWdir},
    Spelling{"-wdir", PartOption::kWdir},
    Spelling{"--wd", PartOption::kWdir},
    Spelling{"-wd", PartOption::kWdir},
    Spelling{"-N", PartOption::kPerHost},
    Spelling{"-ppn", PartOption::kPerHost},
    Spelling{"--ppn", PartOption::kPerHost},
    Spelling{"--npernode", PartOption::kPerHost},
    Spelling{"-npernode", PartOption::kPerHost},
};

const Spelling* spelling_of(std::string_view name) {
  for (const auto& s : kSpellings)
    if (name == s.name) return &s;
  return nullptr;
}

// A count as mpirun takes it: plain decimal digits, 1 to 1,000,000.
Result<int> count_of(const std::string& value, const std::string& flag, const std::string& where) {
  const bool digits =
      !value.empty() && value.size() <= 7 &&
      std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long n = digits ? std::stol(value) : 0;
  if (n < 1 || n > 1'000'000)
    return make_error(where + ": " + flag + ": bad value '" + value +
                      "' (expected a whole number from 1)");
  return static_cast<int>(n);
}

// Whether `word` names a part option ("-np", "--wdir=/x"): its spelling and attached value.
const Spelling* option_word(const std::string& word, std::string& attached, bool& has_attached) {
  const size_t eq = word.find('=');
  has_attached = eq != std::string::npos && word.starts_with("--");
  const Spelling* s = spelling_of(has_attached ? std::string_view(word).substr(0, eq) : word);
  if (s && has_attached) attached = word.substr(eq + 1);
  return s;
}

}  // namespace

bool has_part_separator(const std::vector<std::string>& command) {
  return std::find(command.begin(), command.end(), kPartSeparator) != command.end();
}

Result<std::vector<AppPart>> split_app_line(const std::vector<std::string>& command) {
  std::vector<std::vector<std::string>> pieces(1);
  for (const auto& w : command) {
    if (w == kPartSeparator)
      pieces.emplace_back();
    else
      pieces.back().push_back(w);
  }
  std::vector<AppPart> parts;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string where = "part " + std::to_string(i + 1);
    if (pieces[i].empty())
      return make_error("MPMD line: " + where + " of " + std::to_string(pieces.size()) +
                        " is empty (nothing between two ':', or a ':' at an end)");
    if (i == 0) {
      AppPart first;
      first.command = pieces[0];
      first.where = where;
      parts.push_back(std::move(first));
      continue;
    }
    auto part = parse_app_part(pieces[i], where);
    if (!part) return part.error();
    parts.push_back(std::move(*part));
  }
  return parts;
}

Result<AppPart> parse_app_part(const std::vector<std::string>& words, const std::string& where) {
  AppPart part;
  part.where = where;
  size_t i = 0;
  for (; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.empty() || w[0] != '-' || w == "-") break;
    std::string value;
    bool attached = false;
    const Spelling* s = option_word(w, value, attached);
    if (!s)
      return make_error(where + ": '" + w +
                        "' is not an option a part may carry (-np, -H, -x, -env, --wdir, -N; "
                        "the job's options go before the first command)");
    const int needs = s->option == PartOption::kEnv ? 2 : 1;
    std::vector<std::string> values;
    if (attached) values.push_back(value);
    while (static_cast<int>(values.size()) < needs) {
      if (i + 1 >= words.size())
        return make_error(where + ": " + w + " needs " +
                          (needs == 2 ? "a name and a value" : "a value"));
      values.push_back(words[++i]);
    }
    switch (s->option) {
      case PartOption::kNp: {
        auto n = count_of(values[0], w, where);
        if (!n) return n.error();
        part.np = *n;
        break;
      }
      case PartOption::kPerHost: {
        auto n = count_of(values[0], w, where);
        if (!n) return n.error();
        part.per_host = *n;
        break;
      }
      case PartOption::kHosts:
        part.hosts.push_back(values[0]);
        break;
      case PartOption::kExport:
        part.exports.push_back(values[0]);
        break;
      case PartOption::kEnv:
        if (values[0].empty() || values[0].find('=') != std::string::npos)
          return make_error(where + ": " + w + ": bad variable name '" + values[0] + "'");
        part.exports.push_back(values[0] + "=" + values[1]);
        break;
      case PartOption::kWdir:
        if (values[0].empty()) return make_error(where + ": " + w + ": an empty directory");
        part.wdir = values[0];
        break;
    }
  }
  part.command.assign(words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
  if (part.command.empty()) return make_error(where + ": no command after its options");
  if (part.command.front().empty()) return make_error(where + ": the command is an empty word");
  return part;
}

Result<std::vector<AppPart>> parse_app_file_text(const std::string& text, const std::string& file) {
  std::vector<AppPart> parts;
  const std::vector<std::string> lines = split(text, '\n');
  for (size_t n = 0; n < lines.size(); ++n) {
    const size_t first = n;
    std::string line = lines[n];
    while (line.ends_with('\\') && n + 1 < lines.size()) {
      line.pop_back();
      line += " " + lines[++n];
    }
    const std::string_view body = trim(line);
    if (body.empty() || body.front() == '#') continue;
    const std::string where = file + ":" + std::to_string(first + 1);
    auto words = shell_words(body);
    if (!words) return make_error(where + ": " + words.error().message);
    if (std::find(words->begin(), words->end(), kPartSeparator) != words->end())
      return make_error(where + ": one part a line; ':' does not separate parts in an appfile");
    auto part = parse_app_part(*words, where);
    if (!part) return part.error();
    parts.push_back(std::move(*part));
  }
  if (parts.empty()) return make_error(file + ": no part in it (one '-np N PROGRAM ...' a line)");
  return parts;
}

Result<std::vector<AppPart>> read_app_file(const std::string& path) {
  auto text = read_text_file(path, size_t{1} << 20, "appfile");
  if (!text) return text.error();
  return parse_app_file_text(*text, path);
}

}  // namespace ferry
