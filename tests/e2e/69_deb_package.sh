#!/usr/bin/env bash
# 69_deb_package: ferry installed as a Debian package, on a plain Debian 12.
# 1. CPack makes ferry_<version>_<arch>.deb and ferry-compat_<version>_all.deb from this
#    build; lintian reports no error; the Depends are the run-time libraries dpkg-shlibdeps
#    found (libssh, tomlplusplus, the C and C++ libraries), nothing of the build.
# 2. In a fresh minbase Debian 12 (mmdebstrap), 'apt-get install ./ferry_*.deb' pulls what
#    it needs; ferryrun --version there names this build's version and commit; the man pages
#    and completions are in place; a 2-host job (fnode1, fnode2) runs from it, the hosts
#    getting the package's shipped ferryd.
# 3. ferry-compat: mpirun, mpiexec and horovodrun become alternatives at priority 10 and
#    start ferryrun in their personality.
# 4. 'apt-get remove --autoremove' of both leaves the file system as before the install
#    (but logs, apt's and dpkg's records and the user's home).
# The chroot's mounts live in a mount namespace of each command's own: none outlives it.
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
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libssh-4 libtomlplusplus3 libstdc++6; do
  assert_contains "$depends" "$lib (>=" "Depends names $lib, with the version dpkg-shlibdeps found"
done
assert_not_contains "$depends" "-dev" "no build package in Depends"
assert_eq "ferry (= $version)" "$(dpkg-deb -f "$compat" Depends)" "ferry-compat needs this ferry"
listing=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/ferryrun ./usr/bin/ferryd ./usr/bin/ferry ./usr/libexec/ferry/ferryd-x86_64 \
  ./usr/libexec/ferry/ferryd-x86_64.sha256 ./usr/share/man/man1/ferryrun.1.gz \
  ./usr/share/man/man1/ferryd.1.gz ./usr/share/man/man1/ferry.1.gz \
  ./usr/share/bash-completion/completions/ferryrun ./usr/share/zsh/vendor-completions/_ferry \
  ./usr/share/doc/ferry/copyright; do
  grep -qxF -- "$f" <<<"$listing" || fail "the package lacks $f"
done

# 2. A plain Debian 12.
root=$T/root
mmdebstrap --quiet --variant=minbase bookworm "$root" >"$T/mmdebstrap.log" 2>&1 ||
  fail "mmdebstrap failed: $(tail -5 "$T/mmdebstrap.log")"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# in_root COMMAND...: COMMAND in the chroot, with /proc, /sys and /dev mounted in a mount
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
in_root() { "$T/in_root" "$root" "$@"; }
files_now() {  # every path of the chroot but logs, apt's and dpkg's records and home
  (cd "$root" && find . -xdev \( -path ./var/log -o -path ./var/lib/dpkg -o -path ./var/lib/apt \
    -o -path ./var/cache -o -path ./root -o -path ./tmp -o -path ./proc -o -path ./sys \
    -o -path ./dev -o -path ./etc/ld.so.cache \) -prune -o -print | sort)
}
in_root dpkg -s libssh-4 >/dev/null 2>&1 && fail "the plain Debian 12 has libssh-4 already"
files_now >"$T/before"
cp "$deb" "$compat" "$root/tmp/"
run_capture I -- "$T/in_root" "$root" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq /tmp/'"$(basename "$deb")"
assert_eq 0 "$I_rc" "apt-get install ./ferry_*.deb"
for pkg in ferry libssh-4 libtomlplusplus3; do
  in_root dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed' ||
    fail "$pkg is not installed after apt-get install ./ferry_*.deb"
done
assert_eq "$("$FERRYRUN" --version)" "$(in_root ferryrun --version)" \
  "the installed ferryrun names this build's version and commit"
assert_match "$(in_root ferryrun --version)" "^ferryrun $version \\(commit [0-9a-f]{12}(-dirty)?\\)$" \
  "--version names the commit"
for f in /usr/share/man/man1/ferryrun.1.gz /usr/share/bash-completion/completions/ferry \
  /usr/libexec/ferry/ferryd-x86_64; do
  [[ -s $root$f ]] || fail "$f is not installed"
done
# The cluster's SSH settings, in the user's home inside (its own files: not compared below).
mkdir -p "$root/root/cluster"
cp "$FERRY_CLUSTER_DIR"/{id_ed25519,id_ed25519.pub,known_hosts} "$root/root/cluster/"
sed "s|$FERRY_CLUSTER_DIR|/root/cluster|g" "$SSHCFG" >"$root/root/cluster/ssh_config"
run_capture J -- "$T/in_root" "$root" ferryrun --ssh-config /root/cluster/ssh_config --verbose -np 4 -H fnode1:2,fnode2:2 \
  sh -c "echo \"rank \$RANK of \$WORLD_SIZE on \$(hostname) $tok\""
assert_eq 0 "$J_rc" "a 2-host job from the installed ferryrun"
for r in 0 1 2 3; do
  assert_contains "$J_out" "[$r]<stdout>:rank $r of 4 on fnode$((r / 2 + 1)) $tok" "rank $r's line"
done
# The hosts have no /usr/bin/ferryd: the package's /usr/libexec/ferry copy went (or was there
# from an earlier job, checked by its hash).
assert_match "$J_err" "fnode2.*(shipped ferryd|ferryd cached at)" "the package's ferryd on the hosts"

# 3. ferry-compat.
run_capture C -- "$T/in_root" "$root" sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  /tmp/'"$(basename "$compat")"
assert_eq 0 "$C_rc" "apt-get install ./ferry-compat_*.deb"
alt=$(in_root update-alternatives --query mpirun)
assert_contains "$alt" "Value: /usr/lib/ferry/compat/mpirun" "mpirun is ferryrun's (the only one)"
assert_match "$alt" "Priority: 10" "at priority 10"
assert_contains "$(in_root mpirun --version)" "(mpirun personality)" "mpirun speaks as mpirun"
assert_contains "$(in_root mpiexec --version)" "(mpirun personality)" "mpiexec speaks as mpirun"
assert_contains "$(in_root horovodrun --version)" "(horovodrun personality)" \
  "horovodrun speaks as horovodrun"
run_capture M -- "$T/in_root" "$root" mpirun --ssh-config /root/cluster/ssh_config -np 2 -H fnode1,fnode2 \
  sh -c "echo \"mpi rank \$OMPI_COMM_WORLD_RANK $tok\""
assert_eq 0 "$M_rc" "an mpirun line through ferry-compat"
assert_contains "$M_out" "mpi rank 1 $tok" "rank 1 under mpirun"

# 4. Removed: nothing left.
run_capture R -- "$T/in_root" "$root" sh -c 'DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq --autoremove \
  ferry-compat ferry'
assert_eq 0 "$R_rc" "apt-get remove"
in_root update-alternatives --query mpirun >/dev/null 2>&1 && fail "the mpirun alternative is left"
files_now >"$T/after"
diff "$T/before" "$T/after" >"$T/diff" || fail "apt-get remove left or took files:
$(head -20 "$T/diff")"
wait_cluster_idle 10
pass
