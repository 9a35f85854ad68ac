# ferryd, always portable (cmake/portable.cmake). FERRY_SHIPPED_FERRYD is the stripped copy
# ferryrun sends: libexec/ferry/ferryd-<arch> beside ferryrun's bin/, in the build tree as
# once installed; with it its gzip -9 copy (.gz, 40% of the size), which is what goes to
# hosts that have gzip, and its SHA-256 (.sha256), which ferryrun reads instead of hashing
# the file at every start.

add_executable(ferryd src/apps/ferryd.cpp src/apps/udev_absent.cpp)
target_link_libraries(ferryd PRIVATE ferry_daemon ferry_pool)
set_target_properties(ferryd PROPERTIES FERRY_STATIC_HWLOC ON)
ferry_link_portable(ferryd)
# Every symbol bound at start (-z now; the GOT read-only after it, -z relro): a warm pool's
# fork server forks a ferryd per job, and each lazily bound call in that child wrote the
# GOT, a copy-on-write fault on a page its parent shares (2 ms per job on a busy host).
target_link_options(ferryd PRIVATE LINKER:-z,now LINKER:-z,relro)

set(FERRY_SHIPPED_FERRYD ${CMAKE_BINARY_DIR}/libexec/ferry/ferryd-${FERRY_ARCH})
add_custom_command(TARGET ferryd POST_BUILD
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/libexec/ferry
  COMMAND ${CMAKE_STRIP} --strip-all -o ${FERRY_SHIPPED_FERRYD} $<TARGET_FILE:ferryd>
  COMMAND sh -c "gzip -9 -n -c \"$1\" > \"$1.gz\"" sh ${FERRY_SHIPPED_FERRYD}
  # Its SHA-256, so that ferryrun need not read and hash the file at every start.
  COMMAND sh -c "sha256sum < \"$1\" | cut -c1-64 > \"$1.sha256\"" sh ${FERRY_SHIPPED_FERRYD}
  COMMENT "Stripped copy of ferryd for shipping: libexec/ferry/ferryd-${FERRY_ARCH}"
  VERBATIM)
