#!/usr/bin/env bash
# 13_output_bytes: 4 ranks on 2 hosts each write ~20 MB of lines (random
# lengths, empty lines included, deterministic per rank); after removing the
# "[r]<stdout>:" prefixes each rank's stream must be byte-identical to a local
# recomputation, and no line of ferryrun's stdout may be torn or untagged.
# Twice: the SSH sessions on ferryrun's loop, and on I/O threads of their own.
# Then one rank writes a 10 MB line with no newline at all: it must arrive
# complete, as one line.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

# gen.py SEED [--noline BYTES]: deterministic base64 text from random.Random(SEED).
cat >"$T/gen.py" <<'PY'
import base64, random, sys

seed = int(sys.argv[1])
rng = random.Random(seed)
out = sys.stdout.buffer
if len(sys.argv) > 2 and sys.argv[2] == "--noline":
    n = int(sys.argv[3])
    raw = rng.getrandbits(8 * (n * 3 // 4 + 3)).to_bytes(n * 3 // 4 + 3, "little")
    out.write(base64.b64encode(raw)[:n])
    sys.exit(0)
total, target = 0, 20_000_000
while total < target:
    raw = rng.getrandbits(8 * 48000).to_bytes(48000, "little")
    pool = base64.b64encode(raw)  # 64000 chars
    pos, lines = 0, []
    while True:
        n = rng.randrange(0, 400)
        if pos + n > len(pool):
            break
        lines.append(pool[pos:pos + n])
        pos += n
    chunk = b"\n".join(lines) + b"\n"
    out.write(chunk)
    total += len(chunk)
PY

# check.py FILE: per rank "RANK SHA256 LINES" of the payloads (newline kept),
# then "untagged N FIRST" for lines without a stdout tag.
cat >"$T/check.py" <<'PY'
import hashlib, re, sys

tag = re.compile(rb"^\[([0-9]+)\]<stdout>:")
hashes, counts, bad, first_bad = {}, {}, 0, b""
with open(sys.argv[1], "rb") as f:
    for line in f:
        m = tag.match(line)
        if not m:
            bad += 1
            first_bad = first_bad or line[:80]
            continue
        r = int(m.group(1))
        hashes.setdefault(r, hashlib.sha256()).update(line[m.end():])
        counts[r] = counts.get(r, 0) + 1
for r in sorted(hashes):
    print(r, hashes[r].hexdigest(), counts[r])
print("untagged", bad, repr(first_bad))
PY

tok=$(unique_token)
expected=""
for r in 0 1 2 3; do
  sum=$("$PY" "$T/gen.py" "$r" | sha256sum | cut -d' ' -f1)
  lines=$("$PY" "$T/gen.py" "$r" | wc -l)
  expected+="$r $sum $lines"$'\n'
done
expected+="untagged 0 b''"
# The SSH sessions on ferryrun's loop (this machine's default), then on two I/O threads.
for threads in -1 2; do
  run_capture R -- env FERRY_SSH_IO_THREADS=$threads "$FERRYRUN" --ssh-config "$SSHCFG" \
    -np 4 -H fnode1:2,fnode2:2 sh -c 'exec "$0" "$1" "$RANK"' "$PY" "$T/gen.py" "$tok"
  assert_eq 0 "$R_rc" "ferryrun exit code (FERRY_SSH_IO_THREADS=$threads)"
  echo "13_output_bytes: 4 x 20 MB through ferryrun in ${R_secs}s (FERRY_SSH_IO_THREADS=$threads)" >&2
  actual=$("$PY" "$T/check.py" "$T/R.out")
  assert_eq "$expected" "$actual" \
    "per-rank sha256 and line count of the untagged stream (FERRY_SSH_IO_THREADS=$threads)"
done

# A 10 MB line without newline (rank 1) while rank 0 writes many short lines.
run_capture L -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  sh -c 'if [ "$RANK" = 1 ]; then exec "$0" "$1" 77 --noline 10000000; else seq 1 5000; fi' \
  "$PY" "$T/gen.py" "$tok"
assert_eq 0 "$L_rc" "ferryrun exit code (long line)"
assert_eq 0 "$(grep -cav '^\[[01]\]<stdout>:' "$T/L.out" || true)" "untagged lines (long line)"
assert_eq 5000 "$(count_lines "$T/L.out" '^\[0\]<stdout>:')" "rank 0 lines next to the long line"
assert_eq 1 "$(count_lines "$T/L.out" '^\[1\]<stdout>:')" "rank 1 lines (one 10 MB line)"
got=$(grep -a '^\[1\]<stdout>:' "$T/L.out" | head -n 1 | sed 's/^\[1\]<stdout>://' | tr -d '\n' | sha256sum)
want=$("$PY" "$T/gen.py" 77 --noline 10000000 | sha256sum)
assert_eq "$want" "$got" "sha256 of the 10 MB line without newline"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
