#!/usr/bin/env bash
# 69_sync: --sync puts the user's tree on hosts that cannot see it. ferryrun runs in a mount
# namespace of its own where the tree sits on a tmpfs: fnode1 and fnode2 see an empty
# directory there, and get the tree over their ferryd connection. Every rank starts in its
# host's copy, byte-identical to the tree (modes and inner links kept, .ferryignore's paths
# left out); a second run sends nothing, an edited file alone is sent again (counted by
# --verbose); a cached file tampered with is sent again; two jobs with different trees at once
# each see their own; a rank writing into its copy does not change the cache; the copies are
# gone when the jobs end. Bad input: one line, exit 2.
# shellcheck disable=SC2154 # X_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

# The hosts' cache of synced files ($HOME/.cache/ferry/sync: the hosts of the simulated
# cluster share root's home): emptied, so that counts start from nothing.
CACHE=$HOME/.cache/ferry/sync
rm -rf "$CACHE"
MNT=$T/src
mkdir -p "$MNT"
# in_ns TREE CMD...: CMD in a mount namespace of its own where TREE is copied onto a tmpfs at
# $MNT (the hosts see the empty directory).
in_ns=$T/in_ns
cat >"$in_ns" <<EOS
#!/bin/sh
if [ -z "\$FERRY_E2E_IN_NS" ]; then FERRY_E2E_IN_NS=1 exec unshare -m --propagation private "\$0" "\$@"; fi
unset FERRY_E2E_IN_NS
tree=\$1; shift
mount -t tmpfs ferry-e2e-sync "$MNT" && cp -a "\$tree/." "$MNT/" && exec "\$@"
EOS
chmod +x "$in_ns"

tree=$T/tree
mkdir -p "$tree/conf" "$tree/sub" "$tree/build"
cat >"$tree/manifest.sh" <<'EOS'
#!/bin/sh
# Every file and link under here: its mode and SHA-256, or its target.
find . \( -type f -o -type l \) | LC_ALL=C sort | while read -r f; do
  if [ -L "$f" ]; then echo "link $f $(readlink "$f")"
  else echo "file $f $(stat -c %a "$f") $(sha256sum <"$f" | cut -c1-64)"; fi
done
EOS
chmod 755 "$tree/manifest.sh"
echo "a: 1" >"$tree/conf/a.yaml"
chmod 600 "$tree/conf/a.yaml"
ln -s ../conf "$tree/sub/cfg"
head -c 3000000 /dev/urandom >"$tree/data.bin"
: >"$tree/empty"
printf 'build/\n*.log\n' >"$tree/.ferryignore"
echo obj >"$tree/build/out.o"
echo log >"$tree/run.log"
expected=$(cd "$tree" && ./manifest.sh | grep -v -e '^file ./build/' -e '\.log ')
HOSTS=(--ssh-config "$SSHCFG" -H fnode1:1,fnode2:1)
SHOW='echo "pwd $(pwd)"; [ -e '"$MNT"'/manifest.sh ] && echo "the host sees the source"; ./manifest.sh'

# The first run: every file to both hosts; each rank's copy is the tree.
run_capture S1 --timeout 60 -- "$in_ns" "$tree" "$FERRYRUN" --verbose "${HOSTS[@]}" --sync "$MNT" sh -c "$SHOW"
assert_eq 0 "$S1_rc" "the first synced job"
for r in 0 1; do
  got=$(rank_lines "$T/S1.out" "$r" stdout)
  assert_not_contains "$got" "the host sees the source" "fnode$((r + 1)) cannot see the tree"
  assert_match "$(head -1 <<<"$got")" "^pwd $CACHE/jobs/[0-9]+-[0-9a-f]+$" "rank $r starts in its host's copy"
  assert_eq "$expected" "$(tail -n +2 <<<"$got")" "rank $r's copy is the tree"
done
assert_contains "$S1_err" "sync: 5 files," "the tree's files (build/ and *.log left out)"

# Again, on one host: it lacks nothing. Then one file edited: that file alone goes.
run_capture S2 --timeout 60 -- "$in_ns" "$tree" "$FERRYRUN" --verbose --ssh-config "$SSHCFG" -H fnode1 --sync "$MNT" true
assert_contains "$S2_err" "sync: fnode1 lacks 0 of 5 files (0 B)" "a host that has the tree"
echo "a: 2" >"$tree/conf/a.yaml"
run_capture S3 --timeout 60 -- "$in_ns" "$tree" "$FERRYRUN" --verbose --ssh-config "$SSHCFG" -H fnode1 --sync "$MNT" cat conf/a.yaml
assert_contains "$S3_err" "sync: fnode1 lacks 1 of 5 files (5 B)" "the edited file alone"
assert_eq "a: 2" "$(rank_lines "$T/S3.out" 0 stdout)" "the edited file reached the host"

# A cached file tampered with is sent again; the rank reads the good one.
hash=$(sha256sum <"$tree/conf/a.yaml" | cut -c1-64)
chmod 600 "$CACHE/files/$hash"
echo "a: evil" >"$CACHE/files/$hash"
run_capture S4 --timeout 60 -- "$in_ns" "$tree" "$FERRYRUN" --verbose --ssh-config "$SSHCFG" -H fnode1 --sync "$MNT" cat conf/a.yaml
assert_contains "$S4_err" "sync: fnode1 lacks 1 of 5 files" "the tampered file is asked for again"
assert_eq "a: 2" "$(rank_lines "$T/S4.out" 0 stdout)" "the rank reads the good copy"

# A rank that writes into its copy leaves the cache as it was.
run_capture S5 --timeout 60 -- "$in_ns" "$tree" "$FERRYRUN" --ssh-config "$SSHCFG" -H fnode2 --sync "$MNT" sh -c 'echo scribble >conf/a.yaml'
assert_eq 0 "$S5_rc" "a rank writing into its copy"
assert_eq "a: 2" "$(cat "$CACHE/files/$hash")" "the cache keeps its bytes"

# Two jobs at once, each with its own version of a file, on the same hosts.
tok=$(unique_token)
sleeper=$(sleeper_for "$tok")
cp -a "$tree" "$T/tree2"
echo "b: version two" >"$T/tree2/conf/a.yaml"
start_bg J1 -- "$in_ns" "$tree" "$FERRYRUN" "${HOSTS[@]}" --sync "$MNT" sh -c "$sleeper 2; cat conf/a.yaml"
start_bg J2 -- "$in_ns" "$T/tree2" "$FERRYRUN" "${HOSTS[@]}" --sync "$MNT" sh -c "$sleeper 2; cat conf/a.yaml"
wait_bg J1 60
wait_bg J2 60
assert_eq 0 "$J1_rc" "the first of two jobs at once"
assert_eq 0 "$J2_rc" "the second of two jobs at once"
for r in 0 1; do
  assert_eq "a: 2" "$(rank_lines "$T/J1.out" "$r" stdout)" "job 1 rank $r sees its own tree"
  assert_eq "b: version two" "$(rank_lines "$T/J2.out" "$r" stdout)" "job 2 rank $r sees its own tree"
done
wait_gone "$tok" 10
assert_eq "" "$(ls "$CACHE/jobs")" "no job's copy is left"

# Bad input: one line, exit 2, before any host is reached.
assert_refused "a missing tree" "--sync $T/nope: not a directory" "$FERRYRUN" "${HOSTS[@]}" --sync "$T/nope" true
ln -s /etc "$T/tree2/etc"
assert_refused "a link out of the tree" "$T/tree2/etc: a symlink to /etc, outside the tree" \
  "$FERRYRUN" "${HOSTS[@]}" --sync "$T/tree2" true
rm "$T/tree2/etc"
assert_refused "a tree over --sync-max" "over --sync-max 1.0 MiB" "$FERRYRUN" "${HOSTS[@]}" --sync "$T/tree2" --sync-max 1M true
assert_refused "an absolute DEST" "DEST must be relative" "$FERRYRUN" "${HOSTS[@]}" --sync "$T/tree2:/opt/x" true
assert_refused "--sync-exclude alone" "--sync-exclude needs --sync DIR" "$FERRYRUN" "${HOSTS[@]}" --sync-exclude '*.o' true
wait_cluster_idle 10
pass
