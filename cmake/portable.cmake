# Binaries that run on any x86-64 Linux with glibc 2.31 (Debian 11) or newer, needing no
# libstdc++, hwloc, libssh, OpenSSL or toml++ package of a given version on the machine:
#   - ferryd always: ferryrun ships it to hosts that lack one (docs/design.md, "Shipping
#     ferryd"), so it may need nothing beyond glibc;
#   - ferryrun and ferry with FERRY_PORTABLE (the default): so that one Debian package
#     installs on Debian 11 and 12 (docs/install.md). They link libssh and OpenSSL's
#     libcrypto from Debian's static archives (libssh-dev, libssl-dev) and toml++ as headers;
#     libssh's GSSAPI and zlib stay shared (libgssapi-krb5-2 and zlib1g are in every Debian
#     release, with the same sonames). The price: a fix to libssh or OpenSSL reaches them
#     with a rebuild of ferry, not with the system's update. -DFERRY_PORTABLE=OFF links
#     the system's shared libraries instead (what a distribution's own package would want;
#     that build installs on the release it was built on and newer).
# How, for each:
#   - libstdc++ linked in (-static-libstdc++); libgcc_s stays shared: glibc itself depends
#     on it (Debian's libc6 needs libgcc-s1), and the static libgcc's unwinder would need
#     _dl_find_object (glibc 2.35);
#   - hwloc linked in from Debian's libhwloc.a; its one use of libudev (names of block
#     devices) answers "no udev" (src/apps/udev_absent.cpp, in ferryd), so libudev is not
#     needed;
#   - glibc stays shared (ferryd loads libpmix.so.2 and libcrypto with dlopen, which a static
#     glibc cannot do reliably), but every glibc symbol is bound at a version that 2.31 has:
#     the few that this glibc gives newer default versions are wrapped
#     (src/apps/glibc_floor.cpp) and bound to the older ones. tests/lint/check-glibc-floor
#     checks the result.
# This file is read before the parts are made (it chooses their SSH and TOML libraries);
# ferry_link_portable() is called on each binary once it exists.

find_library(FERRY_HWLOC_STATIC NAMES libhwloc.a HINTS ${HWLOC_LIBRARY_DIRS} REQUIRED)
string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" FERRY_ARCH)
if(FERRY_ARCH STREQUAL "amd64")
  set(FERRY_ARCH x86_64)
endif()

# The oldest glibc the portable binaries run on (Debian 11's): tests/lint/check-glibc-floor
# rejects any symbol version above it, and the package's Depends names it.
set(FERRY_GLIBC_FLOOR 2.31)

option(FERRY_PORTABLE
  "ferryrun and ferry with libssh, libcrypto, hwloc, toml++ and libstdc++ linked in and glibc symbols at 2.31 (one package for Debian 11 and newer)"
  ON)
set(FERRY_PORTABLE_FRONT_END OFF)
if(FERRY_PORTABLE AND NOT FERRY_SANITIZE)
  set(FERRY_PORTABLE_FRONT_END ON)
endif()

if(FERRY_PORTABLE_FRONT_END)
  find_library(FERRY_SSH_STATIC NAMES libssh.a HINTS ${LIBSSH_LIBRARY_DIRS} REQUIRED)
  find_library(FERRY_CRYPTO_STATIC NAMES libcrypto.a REQUIRED)
  # By soname: the unversioned names come with -dev packages the build does not need.
  set(FERRY_SSH_LIBS ${FERRY_SSH_STATIC} ${FERRY_CRYPTO_STATIC} -l:libgssapi_krb5.so.2
    -l:libz.so.1 ${CMAKE_DL_LIBS} Threads::Threads)
  # toml++ as the header-only library it also is (Debian's config makes it a shared one).
  get_target_property(FERRY_TOML_INCLUDES tomlplusplus::tomlplusplus INTERFACE_INCLUDE_DIRECTORIES)
  add_library(ferry_toml INTERFACE)
  target_include_directories(ferry_toml SYSTEM INTERFACE ${FERRY_TOML_INCLUDES})
  target_compile_definitions(ferry_toml INTERFACE TOML_HEADER_ONLY=1)
  set(FERRY_TOML_LIB ferry_toml)
  set(FERRY_FRONT_END_HWLOC "")
else()
  set(FERRY_SSH_LIBS PkgConfig::LIBSSH)
  set(FERRY_TOML_LIB tomlplusplus::tomlplusplus)
  set(FERRY_FRONT_END_HWLOC PkgConfig::HWLOC)
endif()

# libstdc++ linked in and, on x86-64, glibc's symbols bound at 2.31.
function(ferry_link_portable target)
  if(FERRY_SANITIZE)
    return()
  endif()
  target_link_options(${target} PRIVATE -static-libstdc++ LINKER:--as-needed)
  if(FERRY_ARCH STREQUAL "x86_64")
    target_sources(${target} PRIVATE ${CMAKE_SOURCE_DIR}/src/apps/glibc_floor.cpp)
    set(wrapped
      __libc_start_main pthread_create pthread_join pthread_detach pthread_sigmask
      pthread_condattr_setclock pthread_once __pthread_key_create pthread_key_create
      pthread_key_delete pthread_getspecific pthread_setspecific pthread_getaffinity_np
      pthread_setaffinity_np dlopen dlsym dlerror dlclose dladdr stat fstat lstat fstatat fstat64
      close_range arc4random pthread_rwlock_init pthread_rwlock_destroy pthread_rwlock_rdlock
      pthread_rwlock_wrlock pthread_rwlock_unlock)
    foreach(sym ${wrapped})
      target_link_options(${target} PRIVATE LINKER:--wrap=${sym})
    endforeach()
    # Below 2.34, pthread_* and dl* live in libpthread and libdl: name them (this glibc's
    # copies are empty stubs, kept for such binaries).
    target_link_options(${target} PRIVATE
      LINKER:--push-state,--no-as-needed,-l:libpthread.so.0,-l:libdl.so.2,--pop-state)
  endif()
endfunction()

# Linking the static hwloc: the parts that call it (FERRY_HWLOC_PARTS) name the archive in
# their link interface for a binary that asks for it with the property FERRY_STATIC_HWLOC,
# so that it comes after them on the link line (named by the binary itself, it could come
# before a part whose objects need it, and a unity build's batches did).
function(ferry_static_hwloc_for_parts)
  foreach(part ${FERRY_HWLOC_PARTS})
    target_link_libraries(ferry_${part} INTERFACE
      "$<$<BOOL:$<TARGET_PROPERTY:FERRY_STATIC_HWLOC>>:${FERRY_HWLOC_STATIC}>"
      "$<$<BOOL:$<TARGET_PROPERTY:FERRY_STATIC_HWLOC>>:m>")
  endforeach()
endfunction()

# ferryrun and ferry: hwloc as FERRY_PORTABLE says (neither reads a topology; the few of
# hwloc's bitmap functions they reach need no plugin. One that read a topology would have to
# keep the host's hwloc plugins out, as ferryd does); portable, with the libudev stand-ins
# (a unity build's batch may bring in hwloc's topology code all the same) and the libcrypto
# that libssh's archive brought, for ferry's own hashes and seals too
# (src/transport/libcrypto_linked.cpp).
function(ferry_front_end target)
  target_link_libraries(${target} PRIVATE ${FERRY_FRONT_END_HWLOC})
  if(FERRY_PORTABLE_FRONT_END)
    set_target_properties(${target} PROPERTIES FERRY_STATIC_HWLOC ON)
    target_sources(${target} PRIVATE ${CMAKE_SOURCE_DIR}/src/transport/libcrypto_linked.cpp
      ${CMAKE_SOURCE_DIR}/src/apps/udev_absent.cpp)
    ferry_link_portable(${target})
  endif()
endfunction()
