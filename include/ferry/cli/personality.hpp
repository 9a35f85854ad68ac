#pragma once
/// \file
/// Which command line ferryrun speaks: its own, horovodrun's or mpirun's.

#include <optional>
#include <string>

namespace ferry {

/// The dialect of the command line.
enum class Personality {
  kFerryrun,    ///< ferryrun's own options
  kHorovodrun,  ///< horovodrun's flags, tags `[r]<stdout>:`, files D/rank.N/
  kMpirun,      ///< Open MPI mpirun's flags, untagged output, files D/1/rank.N/
};

/// The personality a program name asks for: base name `horovodrun` → kHorovodrun,
/// `mpirun`/`mpiexec` (also `orterun`) → kMpirun, anything else → kFerryrun.
Personality personality_of_program(const std::string& argv0);

/// The personality for `--compat NAME` (horovodrun, mpirun, mpiexec, ferryrun); nullopt for
/// an unknown name.
std::optional<Personality> personality_named(const std::string& name);

/// The program name a personality answers to in messages ("horovodrun").
const char* personality_name(Personality p);

}  // namespace ferry
