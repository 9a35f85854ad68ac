#!/usr/bin/env bash
# 69_sync: --sync puts the user's tree on hosts that cannot see it. ferryrun runs in a mount
# namespace of its own where the tree sits on a tmpfs: fnode1 and fnode2 see an empty
# directory there, and get the tree over their ferryd connection, each into a cache of its own
# (ferry-cluster gives every node a private ~/.cache/ferry/sync). Every rank starts in its
# host's copy, byte-identical to the tree (modes and inner links kept, .ferryignore's paths
# left out); a second run sends nothing, an edited file alone is sent again (counted by
# --verbose); a cached file tampered with is sent again; two jobs with different trees at once
# each see their own; a rank writing into its copy does not change the cache; kill -9 of
# ferryrun in the middle of a sync leaves no copy, no half file and no process; a host that
# stops answering mid-sync fails the start after --start-timeout; the copies are gone when the
# jobs end; on a terminal a progress line shows the bytes sent; mpirun's --preload-binary and --preload-files. Bad input: one line,
# exit 2.
# shellcheck disable=SC2154 # X_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

# on_hosts CMD: CMD on fnode1 and fnode2 (where each host's cache is), its lines tagged.
on_hosts() { "$FERRYRUN" --ssh-config "$SSHCFG" -H fnode1:1,fnode2:1 sh -c "$1"; }
CACHE='~/.cache/ferry/sync'
on_hosts "rm -rf $CACHE/files $CACHE/jobs $CACHE/spares" >/dev/null || fail "cannot empty the hosts' caches"
make_in_ns

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
  assert_match "$(head -1 <<<"$got")" "^pwd $HOME/.cache/ferry/sync/jobs/[0-9]+-[0-9a-f]+$" "rank $r starts in its host's copy"
  assert_eq "$expected" "$(tail -n +2 <<<"$got")" "rank $r's copy is the tree"
done
assert_contains "$S1_err" "sync: 5 files," "the tree's files (build/ and *.log left out)"
for h in fnode1 fnode2; do
  assert_contains "$S1_err" "sync: $h lacks 5 of 5 files" "$h's cache is its own: it lacks every file"
done
# `ferry cache` on a host says what its cache keeps.
on_hosts "$FERRY_BIN/ferry cache" >"$T/C1.out"
for r in 0 1; do
  assert_match "$(rank_lines "$T/C1.out" "$r" stdout)" "^$HOME/\.cache/ferry/sync: 5 files, 2\.9 MiB; 0 copies of running jobs" \
    "ferry cache on fnode$((r + 1))"
done

# Again: each host lacks nothing. Then one file edited: that file alone goes to each.
run_capture S2 --timeout 60 -- "$in_ns" "$tree" "$FERRYRUN" --verbose "${HOSTS[@]}" --sync "$MNT" true
for h in fnode1 fnode2; do
  assert_contains "$S2_err" "sync: $h: sent 0 files (0 B); the ranks start in" "$h has the tree"
  assert_not_contains "$S2_err" "sync: $h lacks" "$h keeps an untouched copy: asked for nothing"
done
echo "a: 2" >"$tree/conf/a.yaml"
run_capture S3 --timeout 60 -- "$in_ns" "$tree" "$FERRYRUN" --verbose "${HOSTS[@]}" --sync "$MNT" cat conf/a.yaml
for h in fnode1 fnode2; do
  assert_contains "$S3_err" "sync: $h lacks 1 of 5 files (5 B)" "the edited file alone, to $h"
  assert_contains "$S3_err" "sync: $h: sent 1 file (5 B)" "one file sent to $h"
done
for r in 0 1; do
  assert_eq "a: 2" "$(rank_lines "$T/S3.out" "$r" stdout)" "the edited file reached rank $r's host"
done

# A cached file tampered with on fnode1 is sent again there (not to fnode2); the rank reads the
# good one. (Its spare copy, the last job's, gone first: with it the cache would not be read.)
hash=$(sha256sum <"$tree/conf/a.yaml" | cut -c1-64)
"$FERRYRUN" --ssh-config "$SSHCFG" -H fnode1 sh -c "rm -rf $CACHE/spares && chmod 600 $CACHE/files/$hash && echo 'a: evil' >$CACHE/files/$hash" ||
  fail "cannot tamper with fnode1's cache"
run_capture S4 --timeout 60 -- "$in_ns" "$tree" "$FERRYRUN" --verbose "${HOSTS[@]}" --sync "$MNT" cat conf/a.yaml
assert_contains "$S4_err" "sync: fnode1 lacks 1 of 5 files" "the tampered file is asked for again"
assert_contains "$S4_err" "sync: fnode2: sent 0 files" "fnode2 was sent nothing"
assert_eq "a: 2" "$(rank_lines "$T/S4.out" 0 stdout)" "the rank reads the good copy"

# A rank that writes into its copy leaves the cache as it was.
run_capture S5 --timeout 60 -- "$in_ns" "$tree" "$FERRYRUN" --ssh-config "$SSHCFG" -H fnode2 --sync "$MNT" sh -c 'echo scribble >conf/a.yaml'
assert_eq 0 "$S5_rc" "a rank writing into its copy"
run_capture S5C --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -H fnode2 sh -c "cat $CACHE/files/$hash"
assert_eq "a: 2" "$(rank_lines "$T/S5C.out" 0 stdout)" "the cache keeps its bytes"
# The next job of that tree on fnode2 takes the copy S5 left (a spare: data.bin is the same
# file, not copied again), mended: the scribbled file is the tree's again, a name S5's rank
# added is gone.
run_capture S6 --timeout 60 -- "$in_ns" "$tree" "$FERRYRUN" --ssh-config "$SSHCFG" -H fnode2 --sync "$MNT" \
  sh -c 'stat -c "inode %i changed %z" data.bin; cat conf/a.yaml; echo stray >stray.txt'
assert_eq 0 "$S6_rc" "a job taking a spare copy"
assert_contains "$(cat "$T/S6.out")" "a: 2" "the spare mended: the file the last job wrote"
run_capture S7 --timeout 60 -- "$in_ns" "$tree" "$FERRYRUN" --ssh-config "$SSHCFG" -H fnode2 --sync "$MNT" \
  sh -c 'stat -c "inode %i changed %z" data.bin; ls; ./manifest.sh'
assert_eq 0 "$S7_rc" "a second job taking the spare"
assert_eq "$(grep inode "$T/S6.out")" "$(grep inode "$T/S7.out")" "the spare is taken, not copied again"
assert_not_contains "$(cat "$T/S7.out")" "stray.txt" "what the last job added is gone"
now=$(cd "$tree" && ./manifest.sh | grep -v -e '^file ./build/' -e '\.log ')
assert_eq "$now" "$(rank_lines "$T/S7.out" 0 stdout | grep -e '^file ' -e '^link ')" "the spare is the tree"

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

# On a terminal, a sync that has something to send shows how far it got, on one line.
head -c 20000000 /dev/zero >"$T/tree2/mid.bin"
run_capture PR --timeout 60 -- "$FERRY_SRC/tests/e2e/programs/in_pty.py" "$T/PR.tty" -- "$in_ns" "$T/tree2" \
  "$FERRYRUN" "${HOSTS[@]}" --sync "$MNT" true
assert_eq 0 "$PR_rc" "a synced job on a terminal"
assert_match "$(tr '\r' '\n' <"$T/PR.tty")" "ferryrun: sync: [0-9.]+ (B|KiB|MiB) of 38\.1 MiB sent, [0-2] of 2 hosts ready" \
  "the progress line"
rm "$T/tree2/mid.bin"

# kill -9 of ferryrun while a large file is on its way: the hosts' ferryds end, leaving no
# copy and no half-received file; the next job syncs as usual.
head -c 200000000 /dev/zero >"$T/tree2/big.bin"
start_bg K -- "$in_ns" "$T/tree2" "$FERRYRUN" --verbose "${HOSTS[@]}" --sync "$MNT" "$sleeper" 30
wait_for "the sync to begin" 30 grep -q "lacks [0-9]* of 6 files" "$T/K.err"
kill -9 "$(pgrep -f "^$FERRYRUN --verbose .*$sleeper 30" | head -1)"
wait_bg K 30
wait_cluster_idle 20
wait_gone "$tok" 10
on_hosts "echo copies \$(ls $CACHE/jobs | wc -l) parts \$(ls -A $CACHE/files | grep -c part)" >"$T/KL.out"
for r in 0 1; do
  assert_eq "copies 0 parts 0" "$(rank_lines "$T/KL.out" "$r" stdout)" "nothing half-made on fnode$((r + 1))"
done

# A host that stops answering in the middle of a sync (its ferryd stopped): the start fails
# after --start-timeout seconds without a word from it, one line naming it; nothing is left.
start_bg ST -- "$in_ns" "$T/tree2" "$FERRYRUN" --verbose --start-timeout 3 "${HOSTS[@]}" --sync "$MNT" "$sleeper" 30
wait_for "the sync to begin" 30 grep -q "lacks [0-9]* of 6 files" "$T/ST.err"
stopped=$(pgrep -f 'ferryd' | tr '\n' ' ')
# shellcheck disable=SC2086 # one pid a word
kill -STOP $stopped 2>/dev/null
wait_bg ST 30
# shellcheck disable=SC2086 # (some were the shells that started them, gone since)
kill -CONT $stopped 2>/dev/null
assert_ne 0 "$ST_rc" "a sync that stalls fails the start"
assert_match "$(cat "$T/ST.err")" "ferryrun: --sync: fnode[12]: no answer for 3 s \(--start-timeout\) while its tree was on its way" \
  "the silent host named"
wait_cluster_idle 20
wait_gone "$tok" 10
rm "$T/tree2/big.bin"

# Bad input: one line, exit 2. What needs no walk (a missing DIR, a file as DIR, DEST) is refused
# before any host is reached; what the reading finds (a link out of the tree, a loop, over
# --sync-max, an unreadable file) once it ends, while the hosts are reached, before anything of
# the tree is sent.
assert_refused "a missing tree" "--sync $T/nope: not a directory" "$FERRYRUN" "${HOSTS[@]}" --sync "$T/nope" true
ln -s /etc "$T/tree2/etc"
assert_refused "a link out of the tree" "$T/tree2/etc: a symlink to /etc, outside the tree" \
  "$FERRYRUN" "${HOSTS[@]}" --sync "$T/tree2" true
rm "$T/tree2/etc"
assert_refused "a tree over --sync-max" "over --sync-max 1.0 MiB" "$FERRYRUN" "${HOSTS[@]}" --sync "$T/tree2" --sync-max 1M true
assert_refused "an absolute DEST" "DEST must be relative" "$FERRYRUN" "${HOSTS[@]}" --sync "$T/tree2:/opt/x" true
assert_refused "--sync-exclude alone" "--sync-exclude needs --sync DIR" "$FERRYRUN" "${HOSTS[@]}" --sync-exclude '*.o' true
assert_refused "a file as DIR" "--sync $tree/run.log: not a directory" "$FERRYRUN" "${HOSTS[@]}" --sync "$tree/run.log" true
ln -s loop2 "$T/tree2/loop1"
ln -s loop1 "$T/tree2/loop2"
assert_refused "a symlink loop" "loop1: a symlink loop (loop1 -> loop2 -> loop1)" "$FERRYRUN" "${HOSTS[@]}" --sync "$T/tree2" true
rm "$T/tree2/loop1" "$T/tree2/loop2"
# A file its owner cannot read: ferryrun as nobody, over a tree nobody may walk.
pub=$(mktemp -d /tmp/ferry-e2e-sync-pub.XXXXXX)
chmod 755 "$pub"
echo x >"$pub/readable"
echo y >"$pub/secret"
chmod 000 "$pub/secret"
run_capture NB --timeout 20 -- runuser -u nobody -- "$FERRYRUN" -H fnode1 --sync "$pub" true
rm -rf "$pub"
assert_eq 2 "$NB_rc" "an unreadable file: exit status"
assert_eq "ferryrun: --sync: $pub/secret: Permission denied" "$NB_err" "an unreadable file: one line"

# mpirun's words: --preload-binary runs the program's copy, --preload-files beside it.
ln -s "$FERRYRUN" "$T/mpirun"
printf '#!/bin/sh\necho "prog $0 in $(pwd)"; cat notes.txt\n' >"$tree/prog"
chmod 755 "$tree/prog"
echo "the notes" >"$tree/notes.txt"
run_capture P --timeout 60 -- "$in_ns" "$tree" "$T/mpirun" --ssh-config "$SSHCFG" -np 2 -H fnode1,fnode2 \
  --preload-binary --preload-files "$MNT/notes.txt" "$MNT/prog"
assert_eq 0 "$P_rc" "mpirun --preload-binary --preload-files"
# (mpirun's lines are untagged, as Open MPI's are.)
assert_eq 2 "$(grep -c "^prog \./prog in $HOME/\.cache/ferry/sync/jobs/[0-9]*-[0-9a-f]*$" "$T/P.out")" \
  "both ranks run the program's copy"
assert_eq 2 "$(grep -cx "the notes" "$T/P.out")" "both ranks read the preloaded file"

on_hosts "echo copies \$(ls $CACHE/jobs | wc -l)" >"$T/END.out"
for r in 0 1; do
  assert_eq "copies 0" "$(rank_lines "$T/END.out" "$r" stdout)" "no job's copy is left on fnode$((r + 1))"
done
# `ferry cache --clear` empties a host's cache.
on_hosts "$FERRY_BIN/ferry cache --clear >/dev/null; ls -A $CACHE/files | wc -l" >"$T/CL.out"
for r in 0 1; do
  assert_eq 0 "$(rank_lines "$T/CL.out" "$r" stdout)" "ferry cache --clear on fnode$((r + 1))"
done
wait_cluster_idle 10
pass
