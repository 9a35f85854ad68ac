# ferryd as one file that runs on any x86-64 Linux with glibc 2.31 (Debian 11) or newer, with
# no libstdc++, hwloc or ferry package on the host: ferryrun ships it to hosts that lack one
# (docs/design.md, "Shipping ferryd").
#   - libstdc++ linked in (-static-libstdc++); libgcc_s stays shared: glibc itself depends
#     on it (Debian's libc6 needs libgcc-s1), and the static libgcc's unwinder would need
#     _dl_find_object (glibc 2.35);
#   - hwloc linked in from Debian's libhwloc.a; its one use of libudev (names of block
#     devices) answers "no udev" (src/apps/udev_absent.cpp), so libudev is not needed;
#   - glibc stays shared (ferryd loads libpmix.so.2 and libcrypto with dlopen, which a static
#     glibc cannot do reliably), but every glibc symbol is bound at a version that 2.31 has:
#     the few that this glibc gives newer default versions are wrapped
#     (src/apps/glibc_floor.cpp) and bound to the older ones. tests/lint/check-glibc-floor
#     checks the result.
# FERRY_SHIPPED_FERRYD is the stripped copy ferryrun sends: libexec/ferry/ferryd-<arch>
# beside ferryrun's bin/, in the build tree as once installed; with it its gzip -9 copy
# (.gz, 40% of the size), which is what goes to hosts that have gzip, and its SHA-256
# (.sha256), which ferryrun reads instead of hashing the file at every start.

find_library(FERRY_HWLOC_STATIC NAMES libhwloc.a HINTS ${HWLOC_LIBRARY_DIRS} REQUIRED)
string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" FERRY_ARCH)
if(FERRY_ARCH STREQUAL "amd64")
  set(FERRY_ARCH x86_64)
endif()

add_executable(ferryd src/apps/ferryd.cpp src/apps/udev_absent.cpp)
target_link_libraries(ferryd PRIVATE ferry_daemon ferry_pool ${FERRY_HWLOC_STATIC} m)
if(NOT FERRY_SANITIZE)
  target_link_options(ferryd PRIVATE -static-libstdc++ LINKER:--as-needed)
  if(FERRY_ARCH STREQUAL "x86_64")
    target_sources(ferryd PRIVATE src/apps/glibc_floor.cpp)
    set(FERRY_GLIBC_WRAPPED
      __libc_start_main pthread_create pthread_join pthread_detach pthread_sigmask
      pthread_condattr_setclock pthread_once __pthread_key_create pthread_key_create
      pthread_key_delete pthread_getspecific pthread_setspecific pthread_getaffinity_np
      pthread_setaffinity_np dlopen dlsym dlerror dlclose stat fstat lstat fstatat fstat64
      close_range arc4random)
    foreach(sym ${FERRY_GLIBC_WRAPPED})
      target_link_options(ferryd PRIVATE LINKER:--wrap=${sym})
    endforeach()
    # Below 2.34, pthread_* and dl* live in libpthread and libdl: name them (this glibc's
    # copies are empty stubs, kept for such binaries).
    target_link_options(ferryd PRIVATE
      LINKER:--push-state,--no-as-needed,-l:libpthread.so.0,-l:libdl.so.2,--pop-state)
  endif()
endif()

set(FERRY_SHIPPED_FERRYD ${CMAKE_BINARY_DIR}/libexec/ferry/ferryd-${FERRY_ARCH})
add_custom_command(TARGET ferryd POST_BUILD
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/libexec/ferry
  COMMAND ${CMAKE_STRIP} --strip-all -o ${FERRY_SHIPPED_FERRYD} $<TARGET_FILE:ferryd>
  COMMAND sh -c "gzip -9 -n -c \"$1\" > \"$1.gz\"" sh ${FERRY_SHIPPED_FERRYD}
  # Its SHA-256, so that ferryrun need not read and hash the file at every start.
  COMMAND sh -c "sha256sum < \"$1\" | cut -c1-64 > \"$1.sha256\"" sh ${FERRY_SHIPPED_FERRYD}
  COMMENT "Stripped copy of ferryd for shipping: libexec/ferry/ferryd-${FERRY_ARCH}"
  VERBATIM)
