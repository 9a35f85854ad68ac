"""The rank program of the restart section: python3 -u restart_worker.py DIR LIMIT_S.

No torch, nothing but the standard library, so that the figures are the launchers' own
and not an import. Both launchers give a rank its attempt in TORCHELASTIC_RESTART_COUNT
(0, 1, ...) and its place in RANK and WORLD_SIZE.

- Every rank, first thing, writes `time.time()` into DIR/start-a<attempt>-r<rank>.
- Attempt 0: the last rank waits until all ranks of attempt 0 have written theirs, writes
  DIR/fail with the time and leaves with os._exit(1); the others sleep until the
  launcher signals them (Python keeps the default action of SIGTERM: it dies at once).
- Attempt 1: every rank exits 0 after writing its start.
- A later attempt, or attempt 0 not complete after LIMIT_S: exit 3 with a line on
  stderr, so a broken launcher shows as a failed run instead of a hang.

Every file is written to a temporary name and renamed, so a reader never sees half a
number. All simulated hosts share this machine's clock and filesystem.
"""

import os
import sys
import time

started = time.time()


def put(directory: str, name: str, value: float) -> None:
    tmp = os.path.join(directory, f".{name}.{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(repr(value))
    os.rename(tmp, os.path.join(directory, name))


def main() -> int:
    directory, limit_s = sys.argv[1], float(sys.argv[2])
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "-1"))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    put(directory, f"start-a{attempt}-r{rank}", started)
    if attempt == 1:
        return 0
    if attempt != 0:
        print(f"restart_worker: rank {rank}: unexpected attempt {attempt}", file=sys.stderr)
        return 3
    deadline = started + limit_s
    if rank != world - 1:
        time.sleep(max(0.0, deadline - time.time()))
        print(f"restart_worker: rank {rank}: not signalled within {limit_s:g} s",
              file=sys.stderr)
        return 3
    names = [f"start-a0-r{r}" for r in range(world)]
    while not all(os.path.exists(os.path.join(directory, n)) for n in names):
        if time.time() > deadline:
            print(f"restart_worker: rank {rank}: attempt 0 incomplete after {limit_s:g} s",
                  file=sys.stderr)
            return 3
        time.sleep(0.001)
    put(directory, "fail", time.time())
    sys.stdout.flush()
    os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
