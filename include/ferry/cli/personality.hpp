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

/// The name ferry's messages start with when started as `argv0`: its base name when that
/// picks a personality ("mpiexec", "horovodrun", "ferryrun"), else "ferryrun" (a renamed
/// binary still speaks ferryrun's command line, so it says so).
std::string program_name(const std::string& argv0);

}  // namespace ferry
