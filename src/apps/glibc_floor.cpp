// The glibc floor of ferryd and of the portable ferryrun and ferry (cmake/portable.cmake):
// the symbols this glibc gives a default version newer than 2.31 (Debian 11) are linked with
// --wrap=NAME, and each __wrap_NAME calls the version 2.31 already had, named with .symver.
// glibc keeps those old versions for binaries built before the change, so these binaries run
// on both. The static archives' references (libstdc++.a's; libssh's and libcrypto's in the
// front ends) go through the wrappers too, which a .symver in ferry's own sources alone would
// not catch. tests/lint/check-glibc-floor fails the build's check when a newer version
// creeps in. A function that 2.31 lacks altogether (sigabbrev_np, 2.32) is not used: ferry
// has its own (ferry/common/signal_names.hpp).

#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>

namespace {

constexpr int kStatVersion = 1;  // _STAT_VER_LINUX on x86-64

using InitFn = void (*)(int, char**, char**);

}  // namespace

// Bound to the old versions (x86-64 names; this file is only built there).
extern "C" {
int ferry_old_libc_start_main(int (*main)(int, char**, char**), int argc, char** argv, InitFn init,
                              void (*fini)(), void (*rtld_fini)(), void* stack);
int ferry_old_pthread_create(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
int ferry_old_pthread_join(pthread_t, void**);
int ferry_old_pthread_detach(pthread_t);
int ferry_old_pthread_sigmask(int, const sigset_t*, sigset_t*);
int ferry_old_pthread_condattr_setclock(pthread_condattr_t*, clockid_t);
int ferry_old_pthread_once(pthread_once_t*, void (*)());
int ferry_old_pthread_key_create(pthread_key_t*, void (*)(void*));
int ferry_old_pthread_key_create_public(pthread_key_t*, void (*)(void*));
int ferry_old_pthread_key_delete(pthread_key_t);
void* ferry_old_pthread_getspecific(pthread_key_t);
int ferry_old_pthread_setspecific(pthread_key_t, const void*);
int ferry_old_pthread_getaffinity_np(pthread_t, size_t, cpu_set_t*);
int ferry_old_pthread_setaffinity_np(pthread_t, size_t, const cpu_set_t*);
void* ferry_old_dlopen(const char*, int);
void* ferry_old_dlsym(void*, const char*);
char* ferry_old_dlerror();
int ferry_old_dlclose(void*);
int ferry_old_dladdr(const void*, Dl_info*);
// OpenSSL's locks, in the portable ferryrun and ferry (libcrypto linked in).
int ferry_old_pthread_rwlock_init(pthread_rwlock_t*, const pthread_rwlockattr_t*);
int ferry_old_pthread_rwlock_destroy(pthread_rwlock_t*);
int ferry_old_pthread_rwlock_rdlock(pthread_rwlock_t*);
int ferry_old_pthread_rwlock_wrlock(pthread_rwlock_t*);
int ferry_old_pthread_rwlock_unlock(pthread_rwlock_t*);
// Before 2.33, stat and friends were inline calls of these, with a layout version first.
int ferry_old_xstat(int, const char*, struct stat*);
int ferry_old_fxstat(int, int, struct stat*);
int ferry_old_lxstat(int, const char*, struct stat*);
int ferry_old_fxstatat(int, int, const char*, struct stat*, int);
}

__asm__(".symver ferry_old_libc_start_main, __libc_start_main@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_create, pthread_create@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_join, pthread_join@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_detach, pthread_detach@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_sigmask, pthread_sigmask@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_condattr_setclock, pthread_condattr_setclock@GLIBC_2.3.3");
__asm__(".symver ferry_old_pthread_once, pthread_once@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_key_create, __pthread_key_create@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_key_create_public, pthread_key_create@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_key_delete, pthread_key_delete@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_getspecific, pthread_getspecific@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_setspecific, pthread_setspecific@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_getaffinity_np, pthread_getaffinity_np@GLIBC_2.3.4");
__asm__(".symver ferry_old_pthread_setaffinity_np, pthread_setaffinity_np@GLIBC_2.3.4");
__asm__(".symver ferry_old_dlopen, dlopen@GLIBC_2.2.5");
__asm__(".symver ferry_old_dlsym, dlsym@GLIBC_2.2.5");
__asm__(".symver ferry_old_dlerror, dlerror@GLIBC_2.2.5");
__asm__(".symver ferry_old_dlclose, dlclose@GLIBC_2.2.5");
__asm__(".symver ferry_old_dladdr, dladdr@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_rwlock_init, pthread_rwlock_init@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_rwlock_destroy, pthread_rwlock_destroy@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_rwlock_rdlock, pthread_rwlock_rdlock@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_rwlock_wrlock, pthread_rwlock_wrlock@GLIBC_2.2.5");
__asm__(".symver ferry_old_pthread_rwlock_unlock, pthread_rwlock_unlock@GLIBC_2.2.5");
__asm__(".symver ferry_old_xstat, __xstat@GLIBC_2.2.5");
__asm__(".symver ferry_old_fxstat, __fxstat@GLIBC_2.2.5");
__asm__(".symver ferry_old_lxstat, __lxstat@GLIBC_2.2.5");
__asm__(".symver ferry_old_fxstatat, __fxstatat@GLIBC_2.4");

// The linker's bounds of this executable's constructor arrays, and crti's _init.
extern "C" {
extern InitFn __preinit_array_start[];  // NOLINT(bugprone-reserved-identifier)
extern InitFn __preinit_array_end[];    // NOLINT(bugprone-reserved-identifier)
extern InitFn __init_array_start[];     // NOLINT(bugprone-reserved-identifier)
extern InitFn __init_array_end[];       // NOLINT(bugprone-reserved-identifier)
void _init();                           // NOLINT(bugprone-reserved-identifier)
}

namespace {

// What glibc before 2.34 expected from the executable as __libc_start_main's `init`
// (crt1's __libc_csu_init): run its constructors. This glibc's crt1 passes none, as its
// __libc_start_main runs them itself; the 2.2.5 one of glibc 2.31 does not, and without
// this no static constructor (std::cout's among them) would run there. Passed
// explicitly, every glibc calls it instead of running them itself.
void run_constructors(int argc, char** argv, char** envp) {
  for (InitFn* f = __preinit_array_start; f != __preinit_array_end; ++f) (*f)(argc, argv, envp);
  _init();
  for (InitFn* f = __init_array_start; f != __init_array_end; ++f) (*f)(argc, argv, envp);
}

}  // namespace

extern "C" {

// libstdc++ reads this (glibc 2.32) to skip atomics in single-threaded programs; ferry's
// programs are multi-threaded, and 0 ("maybe threaded") is always correct.
char __libc_single_threaded = 0;  // NOLINT(bugprone-reserved-identifier)

// NOLINTBEGIN(bugprone-reserved-identifier,readability-identifier-naming)
// Destructors need nothing: the dynamic loader's rtld_fini runs the executable's
// .fini_array on every glibc.
int __wrap___libc_start_main(int (*main)(int, char**, char**), int argc, char** argv, InitFn init,
                             void (*fini)(), void (*rtld_fini)(), void* stack) {
  return ferry_old_libc_start_main(main, argc, argv, init ? init : &run_constructors, fini,
                                   rtld_fini, stack);
}
int __wrap_pthread_create(pthread_t* t, const pthread_attr_t* a, void* (*f)(void*), void* arg) {
  return ferry_old_pthread_create(t, a, f, arg);
}
int __wrap_pthread_join(pthread_t t, void** r) { return ferry_old_pthread_join(t, r); }
int __wrap_pthread_detach(pthread_t t) { return ferry_old_pthread_detach(t); }
int __wrap_pthread_sigmask(int how, const sigset_t* set, sigset_t* old) {
  return ferry_old_pthread_sigmask(how, set, old);
}
int __wrap_pthread_condattr_setclock(pthread_condattr_t* a, clockid_t c) {
  return ferry_old_pthread_condattr_setclock(a, c);
}
int __wrap_pthread_once(pthread_once_t* once, void (*f)()) {
  return ferry_old_pthread_once(once, f);
}
int __wrap___pthread_key_create(pthread_key_t* key, void (*destroy)(void*)) {
  return ferry_old_pthread_key_create(key, destroy);
}
// asio's thread-specific pointers (posix_tss_ptr) use the public names.
int __wrap_pthread_key_create(pthread_key_t* key, void (*destroy)(void*)) {
  return ferry_old_pthread_key_create_public(key, destroy);
}
int __wrap_pthread_key_delete(pthread_key_t key) { return ferry_old_pthread_key_delete(key); }
void* __wrap_pthread_getspecific(pthread_key_t key) { return ferry_old_pthread_getspecific(key); }
int __wrap_pthread_setspecific(pthread_key_t key, const void* value) {
  return ferry_old_pthread_setspecific(key, value);
}
int __wrap_pthread_getaffinity_np(pthread_t t, size_t size, cpu_set_t* set) {
  return ferry_old_pthread_getaffinity_np(t, size, set);
}
int __wrap_pthread_setaffinity_np(pthread_t t, size_t size, const cpu_set_t* set) {
  return ferry_old_pthread_setaffinity_np(t, size, set);
}
void* __wrap_dlopen(const char* file, int mode) { return ferry_old_dlopen(file, mode); }
void* __wrap_dlsym(void* handle, const char* name) { return ferry_old_dlsym(handle, name); }
char* __wrap_dlerror() { return ferry_old_dlerror(); }
int __wrap_dlclose(void* handle) { return ferry_old_dlclose(handle); }
int __wrap_dladdr(const void* addr, Dl_info* info) { return ferry_old_dladdr(addr, info); }
int __wrap_pthread_rwlock_init(pthread_rwlock_t* l, const pthread_rwlockattr_t* a) {
  return ferry_old_pthread_rwlock_init(l, a);
}
int __wrap_pthread_rwlock_destroy(pthread_rwlock_t* l) {
  return ferry_old_pthread_rwlock_destroy(l);
}
int __wrap_pthread_rwlock_rdlock(pthread_rwlock_t* l) { return ferry_old_pthread_rwlock_rdlock(l); }
int __wrap_pthread_rwlock_wrlock(pthread_rwlock_t* l) { return ferry_old_pthread_rwlock_wrlock(l); }
int __wrap_pthread_rwlock_unlock(pthread_rwlock_t* l) { return ferry_old_pthread_rwlock_unlock(l); }
int __wrap_stat(const char* path, struct stat* st) {
  return ferry_old_xstat(kStatVersion, path, st);
}
int __wrap_fstat(int fd, struct stat* st) { return ferry_old_fxstat(kStatVersion, fd, st); }
int __wrap_lstat(const char* path, struct stat* st) {
  return ferry_old_lxstat(kStatVersion, path, st);
}
int __wrap_fstat64(int fd, struct stat* st) { return ferry_old_fxstat(kStatVersion, fd, st); }
int __wrap_fstatat(int dir, const char* path, struct stat* st, int flags) {
  return ferry_old_fxstatat(kStatVersion, dir, path, st, flags);
}
// glibc 2.34 added the wrapper; the system call is older (Linux 5.9). Before that it fails
// with ENOSYS, as glibc's own wrapper would.
int __wrap_close_range(unsigned first, unsigned last, int flags) {
#ifdef SYS_close_range
  return static_cast<int>(::syscall(SYS_close_range, first, last, flags));
#else
  errno = ENOSYS;
  return -1;
#endif
}
// glibc 2.36; libstdc++'s std::random_device uses it. getrandom (Linux 3.17) is older.
uint32_t __wrap_arc4random() {
  uint32_t value = 0;
  auto* out = reinterpret_cast<unsigned char*>(&value);
  size_t got = 0;
  while (got < sizeof value) {
    long n = ::syscall(SYS_getrandom, out + got, sizeof value - got, 0);
    if (n > 0)
      got += static_cast<size_t>(n);
    else if (errno != EINTR)
      break;
  }
  return value;
}
// NOLINTEND(bugprone-reserved-identifier,readability-identifier-naming)
}
