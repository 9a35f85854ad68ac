#include "ferry/cli/personality.hpp"

#include "cli_text.hpp"

namespace ferry {

std::optional<Personality> personality_named(const std::string& name) {
  if (name == "horovodrun") return Personality::kHorovodrun;
  if (name == "mpirun" || name == "mpiexec" || name == "orterun") return Personality::kMpirun;
  if (name == "ferryrun") return Personality::kFerryrun;
  return std::nullopt;
}

Personality personality_of_program(const std::string& argv0) {
  return personality_named(cli_detail::base_name(argv0)).value_or(Personality::kFerryrun);
}

std::string program_name(const std::string& argv0) {
  std::string base = cli_detail::base_name(argv0);
  return personality_named(base) ? base : "ferryrun";
}

const char* personality_name(Personality p) {
  switch (p) {
    case Personality::kHorovodrun:
      return "horovodrun";
    case Personality::kMpirun:
      return "mpirun";
    case Personality::kFerryrun:
      break;
  }
  return "ferryrun";
}

}  // namespace ferry
