"""A tree on every host: `ferryrun --sync` next to `rsync -a` over SSH and pdsh's `pdcp`.

A tree of many small files and a few large ones (2,000 files, 200 MB; --quick: 200 files,
20 MB) goes to every host of the simulated cluster, whose hosts each keep their own cache of
synced files (ferry-cluster gives each a private ~/.cache/ferry/sync). Three cases, each
tool in turn, rounds interleaved:

- first sync: every host's copy emptied first (ferry's cache and spare copies, rsync's and
  pdcp's target folders); ferryrun runs `true` in the synced copy, rsync copies to each host in parallel
  (one `rsync -a -e "ssh -F cluster"` per host, all at once), pdcp to every host in one call.
- one file changed: a small file edited, and every tool brings each host up to date; three
  such edits in turn per round and tool, the median kept (one for pdcp, which has no such
  mode and copies the whole tree again).
- launch of a job whose tree is already everywhere, against the same launch without
  `--sync` (goal: within 10%): 5 pairs per round on its own, 15 through the pool (a pooled
  launch takes 60-90 ms here, and one launch's time moves by more than 10% from run to run),
  the two launches of a pair back to back, each side's median.

ferryrun runs twice in each case: on its own (an SSH session, the login shell and a ferryd
start per host and job) and through a warm pool of the same hosts (`ferry up` once per host
count, `ferryrun --pool`): the tree goes over the pool's connections, and a job pays no SSH.

rsync's targets are folders of their own per host (the simulated hosts share this machine's
file system outside ferry's cache); pdcp's, which has one target path for every host, is a
folder in each host's own ~/.cache/ferry/sync. pdcp exits 0 whatever failed: the files that
arrived on each host are counted, and a short count fails the run. pdcp runs only where pdsh
is installed.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .context import Context

SECTION = "sync"
# Where pdcp copies to on every host: each has its own ~/.cache/ferry/sync (ferry-cluster).
PDCP_TARGET = "/root/.cache/ferry/sync/pdcp-target"
# One-file changes per round and tool (one run's time moves a lot on a busy machine).
CHANGES = 3


@dataclass
class Column:
    key: str
    label: str


COLUMNS = [Column("ferryrun", "ferryrun --sync"), Column("pool", "ferryrun --sync, pooled"),
           Column("rsync", "rsync -a (parallel)"),
           Column("pdcp", "pdcp -r"), Column("no-sync", "ferryrun, no --sync (launch only)")]


def make_tree(root: Path, files: int, total_mb: int) -> None:
    """`files` files: 4 large ones holding most of `total_mb`, the rest 1-4 KB sources."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    big = total_mb * 1_000_000 // 5
    for i in range(4):
        with open(root / f"weights-{i}.bin", "wb") as f:
            f.write(os.urandom(big))
    small = files - 4
    for i in range(small):
        d = root / f"pkg{i % 40}"
        d.mkdir(exist_ok=True)
        with open(d / f"mod{i}.py", "wb") as f:
            f.write(os.urandom(512 + (i % 7) * 512).hex().encode())


def run(ctx: Context) -> None:
    rsync = shutil.which("rsync")
    pdcp = shutil.which("pdcp")
    if not rsync:
        ctx.results.notes.append("sync skipped: rsync is not installed")
        return
    columns = [c for c in COLUMNS if c.key != "pdcp" or pdcp]
    ctx.results.columns[SECTION] = columns
    ctx.results.legends[SECTION] = (
        "`ferryrun --sync TREE true` against rsync over SSH to every host at once and pdcp, "
        "median [min-max] over the rounds; ratios are peer / ferryrun (above 1: ferryrun is "
        "faster). The launch case compares ferryrun with and without --sync.")
    quick = ctx.sizes.throughput_rounds <= 1
    files, mb = (200, 20) if quick else (2000, 200)
    rounds = 2 if quick else 3
    hosts_cases = [4] if quick else [4, 32]
    # FERRY_BENCH_SYNC_HOSTS=4,32: these host counts instead (a quick tree at 32 hosts).
    if os.environ.get("FERRY_BENCH_SYNC_HOSTS"):
        hosts_cases = [int(n) for n in os.environ["FERRY_BENCH_SYNC_HOSTS"].split(",")]
    # FERRY_BENCH_SYNC_ROUNDS=1: fewer rounds (a 32-host round of the full tree is 6 minutes).
    if os.environ.get("FERRY_BENCH_SYNC_ROUNDS"):
        rounds = int(os.environ["FERRY_BENCH_SYNC_ROUNDS"])
    tree = ctx.work / "sync-tree"
    make_tree(tree, files, mb)
    try:
        for n in hosts_cases:
            with ctx.cluster.session(n, "synced trees") as cluster:
                if cluster.nodes < n:
                    ctx.results.notes.append(f"sync: {n} hosts skipped (cluster has {cluster.nodes})")
                    continue
                one_case(ctx, cluster, tree, n, files, mb, rounds, columns)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
        shutil.rmtree(ctx.work / "sync-targets", ignore_errors=True)


def one_case(ctx: Context, cluster, tree: Path, n: int, files: int, mb: int, rounds: int,
             columns: list[Column]) -> None:
    ferry = ctx.ferry()
    cfg = str(cluster.ssh_config)
    hosts = [f"fnode{i + 1}" for i in range(n)]
    ferryrun = [str(ferry.bin_dir / "ferryrun"), "--ssh-config", cfg, "-H",
                ",".join(f"{h}:1" for h in hosts)]
    targets = ctx.work / "sync-targets"
    env = dict(cluster.env(), PDSH_RCMD_TYPE="ssh", PDSH_SSH_ARGS_APPEND=f"-F {cfg}")
    # The pool's state (its socket, its log) in a folder of the benchmark's own.
    pool_env = dict(env, XDG_STATE_HOME=str(ctx.work / "sync-pool-state"))
    pool_name = f"bench-sync-{n}"
    up = subprocess.run([str(ferry.bin_dir / "ferry"), "up", "--name", pool_name, "--idle", "never",
                         "--ssh-config", cfg, "-H", ",".join(hosts)],
                        env=pool_env, capture_output=True, text=True, timeout=300)
    if up.returncode != 0:
        ctx.fail(f"sync: ferry up of {n} hosts failed: {up.stderr.strip()[-300:]}")
        columns = [c for c in columns if c.key != "pool"]
    case = f"{n} hosts, {files} files, {mb} MB"
    first = ctx.results.metric(SECTION, case, "first sync", "s")
    change = ctx.results.metric(SECTION, case, "one file changed", "s")

    def on_hosts(script: str) -> subprocess.CompletedProcess:
        return subprocess.run(ferryrun + ["sh", "-c", script], env=env, capture_output=True,
                              text=True, timeout=120)

    def clean(col: str) -> None:
        if col in ("ferryrun", "pool"):
            on_hosts("rm -rf ~/.cache/ferry/sync/files ~/.cache/ferry/sync/spares")
        elif col == "pdcp":
            on_hosts(f"rm -rf {PDCP_TARGET} && mkdir -p {PDCP_TARGET}")
        else:
            shutil.rmtree(targets / col, ignore_errors=True)
        for h in hosts:
            (targets / col / h).mkdir(parents=True, exist_ok=True)

    def sync(col: str) -> int:
        if col in ("ferryrun", "pool"):
            pool = ["--pool", pool_name] if col == "pool" else []
            return subprocess.run(ferryrun[:1] + pool + ferryrun[1:] + ["--sync", str(tree), "true"],
                                  env=pool_env if pool else env, capture_output=True,
                                  timeout=ctx.sizes.run_timeout_s).returncode
        if col == "rsync":
            procs = [subprocess.Popen(["rsync", "-a", "-e", f"ssh -F {cfg}", f"{tree}/",
                                       f"{h}:{targets / col / h}/"], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                     for h in hosts]
            return max(p.wait(timeout=ctx.sizes.run_timeout_s) for p in procs)
        # pdcp has one target path for every host: a folder each host has of its own (in
        # its private ~/.cache/ferry/sync). pdcp exits 0 whatever failed: the files that
        # arrived on each host are counted instead.
        p = subprocess.run(["pdcp", "-r", "-w", ",".join(hosts), str(tree), PDCP_TARGET],
                           env=env, capture_output=True, timeout=ctx.sizes.run_timeout_s)
        counts = [line.rsplit(":", 1)[-1].strip() for line in
                  on_hosts(f"find {PDCP_TARGET} -type f | wc -l").stdout.splitlines()]
        whole = len(counts) == n and all(c == str(files) for c in counts)
        return p.returncode or (0 if whole else 1)

    def timed(col: Column, what: str, rnd: int) -> float | None:
        start = time.monotonic()
        rc = sync(col.key)
        if rc != 0:
            ctx.fail(f"{col.label} exited {rc} in sync {case} ({what}), round {rnd + 1}")
            return None
        return time.monotonic() - start

    edited = tree / "pkg0" / "mod0.py"
    try:
        for rnd in range(rounds):
            copiers = [c for c in columns if c.key != "no-sync"]
            for col in (copiers if rnd % 2 == 0 else copiers[::-1]):
                ctx.log(f"  sync: {case}: round {rnd + 1}/{rounds} {col.key}")
                clean(col.key)
                t = timed(col, "first", rnd)
                if t is None:
                    continue
                first.add(col.key, rnd, t)
                times = []
                for edit in range(1 if col.key == "pdcp" else CHANGES):
                    with open(edited, "ab") as f:
                        f.write(f"# round {rnd} {col.key} edit {edit}\n".encode())
                    if col.key == "pdcp":
                        clean(col.key)  # pdcp copies whole trees only, into a folder that is not there
                    t = timed(col, "one file", rnd)
                    if t is None:
                        break
                    times.append(t)
                if times:
                    change.add(col.key, rnd, sorted(times)[len(times) // 2])
                # With the pool up its ferryds stay: the hosts are checked once it is down.
                if times and up.returncode != 0:
                    ctx.check_idle(f"sync {col.key}")
        launch(ctx, case, ferryrun, tree, env, rounds,
               pool_name if any(c.key == "pool" for c in columns) else None, pool_env)
    finally:
        if up.returncode == 0:
            subprocess.run([str(ferry.bin_dir / "ferry"), "down", pool_name], env=pool_env,
                           capture_output=True, timeout=120)
        ctx.check_idle(f"sync pool of {n} hosts")


def launch(ctx: Context, case: str, ferryrun: list[str], tree: Path, env, rounds: int,
           pool_name: str | None, pool_env) -> None:
    """A job whose tree is everywhere already, against the same job without --sync; with a
    pool, the same pair through it (the pooled job without --sync is the no-sync column's
    second row)."""
    m = ctx.results.metric(SECTION, case, "launch, tree already there (ferryrun alone)", "s")
    pooled = ctx.results.metric(SECTION, case, "launch through the pool, tree already there",
                                "s") if pool_name else None
    runs = {"ferryrun": 5, "pool": 15}

    def one_time(cmd: list[str], run_env) -> float:
        start = time.monotonic()
        rc = subprocess.run(cmd + ["true"], env=run_env, capture_output=True,
                            timeout=ctx.sizes.run_timeout_s).returncode
        if rc != 0:
            ctx.fail(f"{shlex.join(cmd[1:])} exited {rc} in sync launch")
        return time.monotonic() - start

    def median(times: list[float]) -> float:
        return sorted(times)[len(times) // 2]

    # The launches with and without --sync alternate (each pair back to back), so that a load
    # that changes over the round (the background work the cases before left) weighs on both.
    for rnd in range(rounds):
        pairs = [("ferryrun", ferryrun + ["--sync", str(tree)], env),
                 ("no-sync", ferryrun, env)]
        pooled_pairs = []
        if pooled is not None:
            cmd = ferryrun[:1] + ["--pool", pool_name] + ferryrun[1:]
            pooled_pairs = [("pool", cmd + ["--sync", str(tree)], pool_env),
                            ("no-sync", cmd, pool_env)]
        for metric, group in ((m, pairs), (pooled, pooled_pairs)):
            if not group:
                continue
            times: dict[str, list[float]] = {key: [] for key, _, _ in group}
            for _ in range(runs[group[0][0]]):
                for key, cmd, run_env in group:
                    times[key].append(one_time(cmd, run_env))
            for key, _, _ in group:
                metric.add(key, rnd, median(times[key]))
