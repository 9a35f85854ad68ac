// Finding options and the command in argv before CLI11 sees it: mpirun's single-dash long
// options, multi-value --mca, and where the command starts.

#include <algorithm>

#include "cli_parts.hpp"

namespace ferry {
namespace cli_detail {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

int values_of(const OptionTable& t, const std::string& name) {
  auto it = t.values.find(name);
  return it == t.values.end() ? 0 : it->second;
}

}  // namespace

OptionTable option_table(const CLI::App& app) {
  OptionTable t;
  for (const CLI::Option* o : app.get_options()) {
    int n = std::max(0, o->get_expected_min());
    for (const auto& l : o->get_lnames()) {
      t.long_names.push_back(l);
      if (n > 0) t.values["--" + l] = n;
    }
    const std::string type = o->get_type_name();
    const bool number = type == "INT" || type == "UINT" || type == "FLOAT";
    for (const auto& s : o->get_snames()) {
      if (n > 0) t.values["-" + s] = n;
      if (o->get_expected_max() == 0) t.short_flags.push_back("-" + s);
      if (n > 0 && number) t.number_shorts.push_back("-" + s);
    }
  }
  return t;
}

std::vector<std::string> normalize(const std::vector<std::string>& args, const OptionTable& t) {
  std::vector<std::string> out;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--" || a.empty() || a[0] != '-') break;  // the command starts here
    std::string name = a.substr(0, a.find('='));
    bool has_eq = name.size() != a.size();
    if (name.size() > 2 && name[1] != '-' && contains(t.long_names, name.substr(1))) {
      name = "-" + name;
      a = "-" + a;
    }
    out.push_back(a);
    int n = values_of(t, name);
    if (has_eq) --n;  // --np=4: the first value is attached
    // Only long options and two-letter short ones take separate values (-H a:2);
    // a clustered short form (-Ha:2) carries its value.
    if (!name.starts_with("--") && name.size() != 2) n = 0;
    for (; n > 0 && i + 1 < args.size(); --n) out.push_back(args[++i]);
  }
  for (; i < args.size(); ++i) out.push_back(args[i]);
  return out;
}

void note_typed(const std::vector<std::string>& args, const std::vector<std::string>& normalized,
                RawCli& raw) {
  for (size_t i = 0; i < std::min(args.size(), normalized.size()); ++i) {
    const std::string& a = args[i];
    if (normalized[i] != "-" + a) continue;
    const std::string name = a.substr(0, a.find('='));
    raw.typed.emplace("-" + name, name);
  }
}

std::string typed_as(const RawCli& raw, const std::string& flag) {
  auto it = raw.typed.find(flag);
  return it == raw.typed.end() ? flag : it->second;
}

size_t command_start(const std::vector<std::string>& args, const OptionTable& t) {
  size_t i = 0;
  while (i < args.size()) {
    const std::string& a = args[i];
    if (a == "--" || a.empty() || a[0] != '-') return i;
    std::string name = a.substr(0, a.find('='));
    int n = values_of(t, name);
    if (name.size() != a.size()) --n;
    if (!name.starts_with("--") && name.size() != 2) n = 0;
    i += 1 + static_cast<size_t>(std::max(0, n));
  }
  return std::min(i, args.size());
}

std::string first_flag_cluster(const std::vector<std::string>& args, size_t end,
                               const OptionTable& t) {
  for (size_t i = 0; i < std::min(end, args.size()); ++i) {
    const std::string& a = args[i];
    if (a.size() < 3 || a[0] != '-' || a[1] == '-') continue;
    if (contains(t.short_flags, a.substr(0, 2))) return a;
    const bool number_like = (a[2] >= '0' && a[2] <= '9') || a[2] == '=' || a[2] == '-';
    if (contains(t.number_shorts, a.substr(0, 2)) && !number_like) return a;
  }
  return "";
}

Status take_mca(std::vector<std::string>& args, size_t& end, RawCli& raw) {
  for (size_t i = 0; i < end;) {
    if (args[i] != "--mca" && args[i] != "--gmca") {  // --gmca: every context's, the same here
      ++i;
      continue;
    }
    if (i + 2 >= args.size())
      return make_error(args[i] + " needs a name and a value (--mca plm_rsh_args \"-p 2222\")");
    raw.mca.emplace_back(args[i + 1], args[i + 2]);
    args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 3);
    end = end >= 3 ? end - 3 : 0;
  }
  return {};
}

}  // namespace cli_detail

std::vector<std::string> normalize_single_dash(const std::vector<std::string>& args,
                                               const std::vector<std::string>& long_names,
                                               const std::vector<std::string>& takes_value) {
  cli_detail::OptionTable t;
  t.long_names = long_names;
  for (const auto& v : takes_value) t.values[v] = 1;
  return cli_detail::normalize(args, t);
}

}  // namespace ferry
