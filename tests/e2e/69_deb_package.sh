#!/usr/bin/env bash
# 69_deb_package: ferry installed as a Debian package, on a plain Debian 12 and Debian 11.
# 1. CPack makes ferry_<version>_<arch>.deb and ferry-compat_<version>_all.deb from this
#    build; lintian reports no error; the Depends are the run-time libraries dpkg-shlibdeps
#    found in the portable binaries (cmake/portable.cmake): glibc at 2.31 or older, libgcc_s,
#    libssh's GSSAPI and zlib; not libssh, OpenSSL, toml++, hwloc or libstdc++, which are
#    linked in, and nothing of the build.
# 2. In a fresh minbase Debian 12, then Debian 11 (mmdebstrap), 'apt-get install
#    ./ferry_*.deb' pulls what it needs; ferryrun --version there names this build's version
#    and commit; the man pages and completions are in place; a 2-host job (fnode1, fnode2)
#    runs from it, the hosts getting the package's shipped ferryd; `ferry ps` reads the job.
# 3. ferry-compat: mpirun, mpiexec and horovodrun become alternatives at priority 10 and
#    start ferryrun in their personality.
# 4. 'apt-get remove --autoremove' of both leaves the file system as before the install
#    (but logs, apt's and dpkg's records and the user's home).
# The chroots' mounts live in a mount namespace of each command's own: none outlives it.
# shellcheck disable=SC2154 # J_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
for tool in cpack lintian mmdebstrap dpkg-deb unshare; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/ferry-dev deps test)"
done
build=$(cd "$FERRY_BIN/.." && pwd)
tok=$(unique_token)

# 1. The packages.
(cd "$build" && cpack -G DEB -B "$T/pkg" >"$T/cpack.log" 2>&1) ||
  fail "cpack failed: $(tail -5 "$T/cpack.log")"
deb=$(ls "$T"/pkg/ferry_*_*.deb)
compat=$(ls "$T"/pkg/ferry-compat_*_all.deb)
[[ -f $deb && -f $compat ]] || fail "no packages in $T/pkg: $(ls "$T/pkg")"
version=$("$FERRYRUN" --version | awk '{print $2}')
assert_eq "ferry_${version}_amd64.deb" "$(basename "$deb")" "the package's file name"
lintian "$deb" "$compat" >"$T/lintian.log" 2>&1 || true
assert_eq 0 "$(grep -c '^E:' "$T/lintian.log")" "lintian errors: $(grep '^E:' "$T/lintian.log")"
grep -qx 'FERRY_PORTABLE:BOOL=ON' "$build/CMakeCache.txt" ||
  fail "this build is not portable (-DFERRY_PORTABLE=ON, the default): its package is for Debian 12 alone"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libgcc-s1 libgssapi-krb5-2 zlib1g; do
  assert_contains "$depends" "$lib (>=" "Depends names $lib, with the version dpkg-shlibdeps found"
done
glibc=$(sed -n 's/.*libc6 (>= \([0-9.]*\)).*/\1/p' <<<"$depends")
printf '%s\n2.31\n' "$glibc" | sort -V -C || fail "Depends: libc6 (>= $glibc), newer than Debian 11's 2.31"
for lib in libssh libssl libtomlplusplus libhwloc libstdc++ -dev; do
  assert_not_contains "$depends" "$lib" "$lib is not in Depends (linked in, or a build package)"
done
assert_eq "ferry (= $version)" "$(dpkg-deb -f "$compat" Depends)" "ferry-compat needs this ferry"
listing=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/ferryrun ./usr/bin/ferryd ./usr/bin/ferry ./usr/libexec/ferry/ferryd-x86_64 \
  ./usr/libexec/ferry/ferryd-x86_64.sha256 ./usr/share/man/man1/ferryrun.1.gz \
  ./usr/share/man/man1/ferryd.1.gz ./usr/share/man/man1/ferry.1.gz \
  ./usr/share/bash-completion/completions/ferryrun ./usr/share/zsh/vendor-completions/_ferry \
  ./usr/share/doc/ferry/copyright; do
  grep -qxF -- "$f" <<<"$listing" || fail "the package lacks $f"
done

# 2-4 on a plain Debian RELEASE made by mmdebstrap.
# in_root ROOT COMMAND...: COMMAND in the chroot, with /proc, /sys and /dev mounted in a mount
# namespace that ends with it. A script, so that run_capture can time it.
cat >"$T/in_root" <<'EOS'
#!/bin/sh
r=$1
shift
exec unshare --mount --propagation private sh -c 'r=$1; shift
  mount -t proc proc "$r/proc" && mount -t sysfs sysfs "$r/sys" && mount --bind /dev "$r/dev" &&
  exec chroot "$r" "$@"' sh "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 "$@"
EOS
chmod +x "$T/in_root"
on_release() {  # on_release CODENAME MAJOR
  local release=$1 major=$2 root=$T/root-$1
  in_root() { "$T/in_root" "$root" "$@"; }
  files_now() {  # every path of the chroot but logs, apt's and dpkg's records and home
    (cd "$root" && find . -xdev \( -path ./var/log -o -path ./var/lib/dpkg -o -path ./var/lib/apt \
      -o -path ./var/cache -o -path ./root -o -path ./tmp -o -path ./proc -o -path ./sys \
      -o -path ./dev -o -path ./etc/ld.so.cache \) -prune -o -print | sort)
  }
  mmdebstrap --quiet --variant=minbase "$release" "$root" http://deb.debian.org/debian \
    >"$T/mmdebstrap-$release.log" 2>&1 ||
    fail "mmdebstrap $release failed: $(tail -5 "$T/mmdebstrap-$release.log")"
  assert_match "$(cat "$root/etc/debian_version")" "^$major\\." "$release is Debian $major"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  files_now >"$T/before-$release"
  cp "$deb" "$compat" "$root/tmp/"
  run_capture I -- "$T/in_root" "$root" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq /tmp/'"$(basename "$deb")"
  assert_eq 0 "$I_rc" "$release: apt-get install ./ferry_*.deb"
  in_root dpkg -s ferry 2>/dev/null | grep -q '^Status: install ok installed' ||
    fail "$release: ferry is not installed after apt-get install ./ferry_*.deb"
  for pkg in libssh-4 libssh-gcrypt-4 libtomlplusplus3 libhwloc15; do
    in_root dpkg -s "$pkg" >/dev/null 2>&1 && fail "$release: $pkg was installed: it should not be needed"
  done
  assert_eq "$("$FERRYRUN" --version)" "$(in_root ferryrun --version)" \
    "$release: the installed ferryrun names this build's version and commit"
  assert_match "$(in_root ferryrun --version)" "^ferryrun $version \\(commit [0-9a-f]{12}(-dirty)?\\)$" \
    "$release: --version names the commit"
  for f in /usr/share/man/man1/ferryrun.1.gz /usr/share/bash-completion/completions/ferry \
    /usr/libexec/ferry/ferryd-x86_64; do
    [[ -s $root$f ]] || fail "$release: $f is not installed"
  done
  # The cluster's SSH settings, in the user's home inside (its own files: not compared below).
  mkdir -p "$root/root/cluster"
  cp "$FERRY_CLUSTER_DIR"/{id_ed25519,id_ed25519.pub,known_hosts} "$root/root/cluster/"
  sed "s|$FERRY_CLUSTER_DIR|/root/cluster|g" "$SSHCFG" >"$root/root/cluster/ssh_config"
  run_capture J -- "$T/in_root" "$root" ferryrun --ssh-config /root/cluster/ssh_config --verbose \
    -np 4 -H fnode1:2,fnode2:2 sh -c "echo \"rank \$RANK of \$WORLD_SIZE on \$(hostname) $tok\""
  assert_eq 0 "$J_rc" "$release: a 2-host job from the installed ferryrun"
  for r in 0 1 2 3; do
    assert_contains "$J_out" "[$r]<stdout>:rank $r of 4 on fnode$((r / 2 + 1)) $tok" "$release: rank $r's line"
  done
  # The hosts have no /usr/bin/ferryd: the package's /usr/libexec/ferry copy went (or was
  # there from an earlier job, checked by its hash).
  assert_match "$J_err" "fnode2.*(shipped ferryd|ferryd cached at)" "$release: the package's ferryd on the hosts"
  # A kept job, and the ferry tool reading it (the signal's name: ferry's own table).
  run_capture D -- "$T/in_root" "$root" ferryrun --detach --ssh-config /root/cluster/ssh_config \
    -H fnode1 -np 1 sh -c "kill -TERM \$\$"
  assert_eq 0 "$D_rc" "$release: ferryrun --detach"
  kept=$(tr -d '[:space:]' <<<"$D_out")
  run_capture W -- "$T/in_root" "$root" ferry wait "$kept"
  assert_eq 143 "$W_rc" "$release: ferry wait gives the rank's SIGTERM as 128+15"
  assert_contains "$(in_root ferry logs "$kept")" "was killed by SIGTERM (Terminated)" \
    "$release: the journal names the signal"
  assert_match "$(in_root ferry ps)" " ended +143 " "$release: ferry ps reads the ended job"

  # 3. ferry-compat.
  run_capture C -- "$T/in_root" "$root" sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    /tmp/'"$(basename "$compat")"
  assert_eq 0 "$C_rc" "$release: apt-get install ./ferry-compat_*.deb"
  alt=$(in_root update-alternatives --query mpirun)
  assert_contains "$alt" "Value: /usr/lib/ferry/compat/mpirun" "$release: mpirun is ferryrun's (the only one)"
  assert_match "$alt" "Priority: 10" "$release: at priority 10"
  assert_contains "$(in_root mpirun --version)" "(mpirun personality)" "$release: mpirun speaks as mpirun"
  assert_contains "$(in_root mpiexec --version)" "(mpirun personality)" "$release: mpiexec speaks as mpirun"
  assert_contains "$(in_root horovodrun --version)" "(horovodrun personality)" \
    "$release: horovodrun speaks as horovodrun"
  run_capture M -- "$T/in_root" "$root" mpirun --ssh-config /root/cluster/ssh_config -np 2 -H fnode1,fnode2 \
    sh -c "echo \"mpi rank \$OMPI_COMM_WORLD_RANK $tok\""
  assert_eq 0 "$M_rc" "$release: an mpirun line through ferry-compat"
  assert_contains "$M_out" "mpi rank 1 $tok" "$release: rank 1 under mpirun"

  # 4. Removed: nothing left.
  run_capture R -- "$T/in_root" "$root" sh -c 'DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq --autoremove \
    ferry-compat ferry'
  assert_eq 0 "$R_rc" "$release: apt-get remove"
  in_root update-alternatives --query mpirun >/dev/null 2>&1 && fail "$release: the mpirun alternative is left"
  files_now >"$T/after-$release"
  diff "$T/before-$release" "$T/after-$release" >"$T/diff-$release" ||
    fail "$release: apt-get remove left or took files:
$(head -20 "$T/diff-$release")"
  rm -rf "$root"
}
on_release bookworm 12
on_release bullseye 11
wait_cluster_idle 10
pass
