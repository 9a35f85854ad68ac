# cmake -DSOURCE_DIR=... -DOUT=... [-DCOMMIT=...] -P build_info.cmake
# Writes OUT, the commit the binaries are built from, for their --version: the short hash of
# git's HEAD with "-dirty" when tracked files differ from it; COMMIT when given (a build from
# a release tarball names its own); "unknown" without either. OUT is rewritten only when its
# text changes, so a build at the same commit recompiles nothing.
if(NOT COMMIT)
  execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
    OUTPUT_VARIABLE COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND COMMIT)
    execute_process(COMMAND git -C "${SOURCE_DIR}" diff --quiet HEAD -- RESULT_VARIABLE dirty
      ERROR_QUIET)
    if(NOT dirty EQUAL 0)
      string(APPEND COMMIT "-dirty")
    endif()
  else()
    set(COMMIT unknown)
  endif()
endif()
set(text "// Written by cmake/build_info.cmake at every build.\n#define FERRY_COMMIT \"${COMMIT}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
