# Installing ferry like the tools it replaces: man pages and shell completion written from the
# programs' own --help (packaging/manpages.py), the install rules, and CPack's Debian
# packages (`cmake --build build --target package`, docs/install.md):
#   ferry         ferryrun, ferryd, ferry, the ferryd that ferryrun ships, man pages,
#                 completions, docs; its Depends found by dpkg-shlibdeps;
#   ferry-compat  mpirun, mpiexec and horovodrun as alternatives (priority 10) to ferryrun.
# The manuals need python3 and packaging/: a build without them (docker/Dockerfile's, which
# copies only the sources) installs the programs alone.
find_package(Python3 COMPONENTS Interpreter)
set(FERRY_MANPAGES ${CMAKE_SOURCE_DIR}/packaging/manpages.py)
if(Python3_FOUND AND EXISTS ${FERRY_MANPAGES})
  set(FERRY_MANUALS ON)
else()
  set(FERRY_MANUALS OFF)
  message(STATUS "ferry: no man pages, completions or docs to install (python3 or packaging/ missing)")
endif()

install(TARGETS ferryrun ferryd ferry RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ferry)
# The stripped copy ferryrun ships to hosts that have no ferryd (docs/design.md, "Shipping
# ferryd"): <prefix>/libexec/ferry/ferryd-<arch>, found from ferryrun's own folder; beside
# it its gzip copy and its SHA-256, which ferryrun reads.
install(PROGRAMS ${FERRY_SHIPPED_FERRYD} DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/ferry
  COMPONENT ferry)
install(FILES ${FERRY_SHIPPED_FERRYD}.gz ${FERRY_SHIPPED_FERRYD}.sha256
  DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/ferry COMPONENT ferry)

if(FERRY_MANUALS)
set(FERRY_DOCS_OUT ${CMAKE_BINARY_DIR}/share)
# The pages' date: today, or SOURCE_DATE_EPOCH's for a reproducible build.
string(TIMESTAMP FERRY_MAN_DATE "%Y-%m-%d")
set(FERRY_DOC_FILES)
foreach(prog ferryrun ferryd ferry)
  set(page ${FERRY_DOCS_OUT}/man/man1/${prog}.1)
  add_custom_command(OUTPUT ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${FERRY_DOCS_OUT}/man/man1
    COMMAND ${Python3_EXECUTABLE} ${FERRY_MANPAGES} man ${CMAKE_BINARY_DIR}/bin
      ${CMAKE_SOURCE_DIR}/packaging/man/${prog}.1.in ${page} ${PROJECT_VERSION} ${FERRY_MAN_DATE}
    COMMAND sh -c "gzip -9 -n -c \"$1\" > \"$1.gz\"" sh ${page}
    DEPENDS ${prog} ${FERRY_MANPAGES} ${CMAKE_SOURCE_DIR}/packaging/man/${prog}.1.in
    COMMENT "Man page ${prog}(1) from ${prog} --help"
    VERBATIM)
  list(APPEND FERRY_DOC_FILES ${page}.gz)
endforeach()
foreach(shell bash zsh)
  set(out ${FERRY_DOCS_OUT}/completion/ferry.${shell})
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${FERRY_DOCS_OUT}/completion
    COMMAND ${Python3_EXECUTABLE} ${FERRY_MANPAGES} ${shell} ${CMAKE_BINARY_DIR}/bin ${out}
    DEPENDS ferryrun ferry ${FERRY_MANPAGES}
      ${CMAKE_SOURCE_DIR}/packaging/completion/ferry.${shell}.in
    COMMENT "${shell} completion of ferryrun and ferry from their --help"
    VERBATIM)
  list(APPEND FERRY_DOC_FILES ${out})
endforeach()
set(FERRY_CHANGELOG ${FERRY_DOCS_OUT}/changelog.gz)
add_custom_command(OUTPUT ${FERRY_CHANGELOG}
  COMMAND sh -c "gzip -9 -n -c \"$1\" > \"$2\"" sh ${CMAKE_SOURCE_DIR}/packaging/deb/changelog
    ${FERRY_CHANGELOG}
  DEPENDS ${CMAKE_SOURCE_DIR}/packaging/deb/changelog
  VERBATIM)
add_custom_target(ferry_manuals ALL DEPENDS ${FERRY_DOC_FILES} ${FERRY_CHANGELOG})
install(DIRECTORY ${FERRY_DOCS_OUT}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR} COMPONENT ferry
  FILES_MATCHING PATTERN "*.gz")
# bash-completion loads a command's completion from a file named after it.
foreach(name ferryrun ferry)
  install(FILES ${FERRY_DOCS_OUT}/completion/ferry.bash DESTINATION
    ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME ${name} COMPONENT ferry)
endforeach()
install(FILES ${FERRY_DOCS_OUT}/completion/ferry.zsh DESTINATION
  ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions RENAME _ferry COMPONENT ferry)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/packaging/deb/copyright
  ${FERRY_CHANGELOG} DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT ferry)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
  COMPONENT ferry FILES_MATCHING PATTERN "*.md" PATTERN images EXCLUDE)
# ferry-compat: the names, as links to ferryrun in a folder of their own (the alternatives
# point there, so that 'update-alternatives --display mpirun' says whose they are).
foreach(name mpirun mpiexec horovodrun)
  install(CODE "
    set(dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/ferry/compat\")
    file(MAKE_DIRECTORY \"\${dir}\")
    execute_process(COMMAND \${CMAKE_COMMAND} -E create_symlink ../../../bin/ferryrun
      \"\${dir}/${name}\")" COMPONENT compat)
endforeach()
install(FILES ${CMAKE_SOURCE_DIR}/packaging/deb/copyright ${FERRY_CHANGELOG}
  DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/ferry-compat COMPONENT compat)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ferry)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "ferry maintainers <ferry-maintainers@example.org>")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ferry compat)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_FERRY_PACKAGE_NAME ferry)
set(CPACK_DEBIAN_FERRY_DESCRIPTION
  "multi-node job runner in the family of mpirun and horovodrun
ferryrun starts a job of N ranks over hosts reached by SSH (or inside a Slurm
allocation), with one SSH session and one small daemon (ferryd) per host. It
binds ranks to cores and accelerators, sets the environment PyTorch, Horovod,
Open MPI and MPICH expect, serves their rendezvous, tags every rank's output
lines, propagates exit codes and signals and leaves no process behind.

It reads horovodrun's and mpirun's command lines (see ferry-compat), keeps jobs
running without a terminal (ferry attach), syncs code to hosts that share no
file system, and keeps warm pools of daemons for many short jobs.")
set(CPACK_DEBIAN_FERRY_PACKAGE_SUGGESTS "openssh-server, gdb")
set(CPACK_DEBIAN_COMPAT_PACKAGE_NAME ferry-compat)
set(CPACK_DEBIAN_COMPAT_PACKAGE_DEPENDS "ferry (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_COMPAT_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_COMPAT_DESCRIPTION
  "mpirun, mpiexec and horovodrun names for ferryrun
Installs ferryrun as the mpirun (with mpiexec) and horovodrun alternatives at
priority 10, below Open MPI's and MPICH's: where those are installed they stay
the default until 'update-alternatives --config mpirun' picks ferry. Called by
these names, ferryrun reads that launcher's command line.")
set(CPACK_DEBIAN_COMPAT_PACKAGE_CONTROL_EXTRA
  ${CMAKE_SOURCE_DIR}/packaging/deb/compat/postinst ${CMAKE_SOURCE_DIR}/packaging/deb/compat/prerm)
set(CPACK_DEBIAN_COMPAT_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
if(FERRY_PORTABLE_FRONT_END)
  # libc6's version in Depends: the portable binaries' glibc floor, not this machine's glibc.
  configure_file(${CMAKE_SOURCE_DIR}/cmake/cpack_portable_depends.cmake.in
    ${CMAKE_BINARY_DIR}/cpack_portable_depends.cmake @ONLY)
  set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/cpack_portable_depends.cmake)
endif()
include(CPack)
