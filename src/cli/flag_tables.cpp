// Flags of other launchers that ferry refuses with a reason, or accepts with no effect.

#include <functional>

#include "cli_parts.hpp"
#include "ferry/common/text.hpp"

namespace ferry::cli_detail {
namespace {

// Each spelling of `names` on its own, so that a message names the one the user gave.
std::vector<std::string> spellings(const char* names) { return split(names, ','); }

// A flag, or an option taking `values` words, that calls `use` when given.
CLI::Option* add_any(CLI::App& app, const std::string& name, int values, const std::string& help,
                     const std::function<void()>& use) {
  if (values == 0)
    return app.add_flag_function(
        name, [use](std::int64_t) { use(); }, help);
  CLI::Option* o = app.add_option_function<std::vector<std::string>>(
      name, [use](const std::vector<std::string>&) { use(); }, help);
  o->expected(values)->allow_extra_args(false);
  return o;
}

}  // namespace

void add_refusals(CLI::App& app, RawCli& raw, std::span<const Refusal> refusals,
                  const std::string& group) {
  for (const Refusal& r : refusals) {
    const auto names = spellings(r.names);
    // --help shows the first spelling, naming the others; each is its own option so that
    // the error names the one given.
    std::string help = r.why;
    if (names.size() > 1) {
      std::string also;
      for (size_t i = 1; i < names.size(); ++i) also += (also.empty() ? "" : ", ") + names[i];
      help = "(also " + also + ") " + help;
    }
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string& name = names[i];
      add_any(app, name, r.values, i == 0 ? help.c_str() : r.why, [&raw, name] {
        raw.refused.push_back(name);
      })->group(i == 0 ? group : "");
    }
  }
}

Status first_refusal(const RawCli& raw, std::span<const Refusal> refusals) {
  for (const std::string& flag : raw.refused)
    for (const Refusal& r : refusals)
      for (const std::string& name : spellings(r.names))
        if (name == flag) return make_error(typed_as(raw, flag) + ": " + r.why);
  return {};
}

void add_no_effect(CLI::App& app, RawCli& raw, std::span<const NoEffect> flags) {
  for (const NoEffect& f : flags)
    for (const std::string& name : spellings(f.names)) {
      const char* note = f.note;
      add_any(app, name, f.values, note, [&raw, name, note] {
        raw.notes.push_back(typed_as(raw, name) + ": " + note);
      })->group("");
    }
}

}  // namespace ferry::cli_detail
