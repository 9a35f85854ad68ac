"""Open MPI jobs: ferryrun (ferryd's PMIx server) next to Open MPI's own mpirun.

The same program, built here with mpicc.openmpi (bench/mpi_bench.c), under both launchers
on the simulated cluster:

- launch: the wall time of an `MPI_Init; MPI_Barrier; MPI_Finalize` job, cold (fresh SSH
  connections and daemons every run), measured with hyperfine, on 2 hosts x 1 rank (the
  case a 2-CPU machine runs without oversubscribing) and the launch cases (4 hosts x 2
  ranks, 8 x 4); the tools interleaved in a rotated order every round;
- CPU time of that launch, once per tool and round outside hyperfine: of the whole machine
  (user and system time of every CPU, nice time left out: CI runs clang-tidy at nice 19
  beside the benchmark) and of the ranks alone (each rank's getrusage after
  MPI_Finalize). Where the simulated hosts share few CPUs, the ranks' own CPU time divided
  by the CPU count is a floor under any launcher's wall time: the note it gives says how
  far that floor lets a launcher get ahead of mpirun here;
- the same launch with both launchers' ranks given the `mtl` setting ferryd gives its own
  (the PSM transports left out where the host has no adapter for them): under ferryrun alone
  the ranks' MPI_Init is 0.2 s shorter on Debian's Open MPI, so this row shows what the
  launchers themselves cost (2 hosts x 1, 4 hosts x 2; the short form 2x1 only);
- an MPMD job's start: `-np 1 prog : -np 3 prog` on 2 hosts x 2 (one world of 4), cold,
  as the launch above;
- MPI_Comm_spawn: 2 ranks (one per host, 3 slots each, `--map-by node`) spawn 4 children,
  two on each host; rank 0's own figure from the call to its return (the children started
  and connected back), one job per tool and round;
- MPICH's spawn (PMI-1's PMI_Spawn_multiple, which MPICH's MPI_Comm_spawn calls) under
  ferryrun and MPICH's hydra: tests/e2e/programs/pmi_spawn.c, MPICH's own PMI client linked
  from libmpich.a (Debian's MPICH 4.0.2 fails a whole MPI_Comm_spawn before it asks the
  process manager, under either launcher). Rank 0 of 2 (one per host, 3 slots each) spawns 1 +
  3 processes; the figures are the call's own time and the time from the call until every
  child is through its group's first barrier (the clock the simulated hosts share), one job
  per tool and round;
- latency: the job's own figures, printed by rank 0: a ping-pong of 8 bytes between two
  ranks on one host and on two hosts, and an 8-byte MPI_Allreduce over 8 ranks on one host
  and on 4 hosts x 2. Where the launcher places and binds the ranks must not slow MPI: the
  figures should be level within noise.

A job whose rank died of SIGSEGV (exit 139) is run once more, and the first try is kept in
the report's notes: Debian's Open MPI 4.1.4 crashes that way in about one `MPI_Finalize` in
two thousand on this machine. Its core shows why, in the rank's own Open MPI: `MPI_Finalize`
unloads the PMIx component (mca_pmix_ext3x.so) before it stops the progress thread that still
holds an event the component handed it in `MPI_Init` (an `ext3x_threadshift_t` for the
PMIX_MODEL_DECLARED notification, its callback that component's `_event_hdlr`), and the
thread runs it after the code is gone (docs/frameworks.md). Any other failure, and a second
SIGSEGV in a row, fail the benchmark.

MPICH's hydra is in this section for MPICH's spawn alone: it cannot start Open MPI programs. Both launchers'
ranks get OMPI_MCA_btl=self,vader,tcp (no InfiniBand here) and
OMPI_MCA_mpi_yield_when_idle=1: the simulated hosts share this machine's CPUs, so ranks that
spin while they wait would measure the scheduler.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from .cluster import host_list
from .context import Context
from .stats import summarize

SECTION = "mpi"
SOURCE = Path(__file__).resolve().parent.parent / "mpi_bench.c"
PMI_SPAWN_SOURCE = (Path(__file__).resolve().parents[2] / "tests" / "e2e" / "programs" /
                    "pmi_spawn.c")
MCA = {"OMPI_MCA_btl": "self,vader,tcp", "OMPI_MCA_mpi_yield_when_idle": "1"}
# (label, hosts, ranks per host, mode)
LATENCY_CASES = [("ping-pong, one host", 1, 2, "pingpong"),
                 ("ping-pong, two hosts", 2, 1, "pingpong"),
                 ("allreduce 8 ranks, one host", 1, 8, "allreduce"),
                 ("allreduce 8 ranks, 4 hosts x 2", 4, 2, "allreduce")]


def run(ctx: Context) -> None:
    # A --baseline build may predate PMIx (its Open MPI ranks would be singletons): left out.
    tools = [t for t in ctx.tools if t.key in ("ferryrun", "openmpi")]
    if not any(t.key == "openmpi" for t in tools):
        ctx.results.notes.append("mpi: skipped (Open MPI's mpirun is not available)")
        return
    prog = build_program(ctx)
    if prog is None:
        return
    s = ctx.sizes
    nodes = max([h for h, _ in s.launch_cases] + [4])
    with ctx.cluster.session(nodes, "Open MPI jobs") as cluster:
        env = dict(cluster.env(), **MCA)
        cases = [(2, 1)] + [c for c in s.launch_cases if c[0] <= cluster.nodes]
        for hosts_n, per_host in cases:
            launch_case(ctx, tools, env, prog, hosts_n, per_host)
        mtl = ferry_mtl(ctx, env)
        if mtl:
            # The short form (CI) measures 2x1 only: each case costs mpirun seconds.
            for hosts_n, per_host in cases[:2 if s.launch_rounds > 2 else 1]:
                launch_case(ctx, tools, dict(env, OMPI_MCA_mtl=mtl), prog, hosts_n, per_host,
                            f", both with mtl {mtl}")
        else:
            ctx.results.notes.append("mpi: ferryd gives Open MPI ranks no mtl setting here: "
                                     "the same-settings row is left out")
        for label, hosts_n, per_host, mode in LATENCY_CASES:
            latency_case(ctx, tools, env, prog, label, hosts_n, per_host, mode)
        mpmd_case(ctx, tools, env, prog)
        spawn_case(ctx, tools, env, prog)
        pmi_spawn_case(ctx, cluster.env())


def spawn_case(ctx, tools, env, prog) -> None:
    """MPI_Comm_spawn of 4 children by 2 ranks on 2 hosts x 3 slots: the call's own time on
    rank 0, under both launchers, each `runs` times a round."""
    hosts = host_list(2, 3)
    case = "MPI_Comm_spawn: 2 ranks spawn 4 children on 2 hosts"
    metric = ctx.results.metric(SECTION, case, "MPI_Comm_spawn, call to return", "s")
    children_cpu = ctx.results.metric(SECTION, case, "CPU time of the 4 children", "s")

    def command(t):
        cmd = t.command(hosts, 2, [str(prog), "spawn", "4"])
        cmd[1:1] = ["--map-by", "node"]
        return cmd

    def record(t, rnd, r) -> bool:
        m = re.search(r"spawn_s ([0-9.]+) children 4", r.stdout)
        if r.returncode != 0 or not m:
            return False
        metric.add(t.key, rnd, float(m.group(1)))
        cpu = [float(x) for x in re.findall(r"rank_cpu_s ([0-9.]+)", r.stdout)]
        if len(cpu) == 4:
            children_cpu.add(t.key, rnd, sum(cpu))
        return True

    spawn_jobs(ctx, tools, env, case, command, record)
    # The children's own MPI_Init is CPU work that no launcher saves: on few CPUs it bounds
    # how far ahead of mpirun a launcher can get.
    if "ferryrun" in children_cpu.by_tool and "openmpi" in metric.by_tool:
        used = summarize(children_cpu.by_tool["ferryrun"].samples()).median
        mpirun = summarize(metric.by_tool["openmpi"].samples()).median
        floor = used / (os.cpu_count() or 1)
        ctx.results.notes.append(
            f"mpi {case}: the 4 children alone used {used:.2f} CPU-s under ferryrun; on this "
            f"machine's {os.cpu_count()} CPUs no launcher can return from the spawn in less "
            f"than {floor:.2f} s, {mpirun / floor:.1f}x mpirun's {mpirun:.2f} s at best")


def pmi_spawn_case(ctx, env) -> None:
    """MPICH's spawn through PMI-1 under ferryrun and hydra (the module's docstring)."""
    tools = [t for t in ctx.tools if t.key in ("ferryrun", "hydra")]
    if not any(t.key == "hydra" for t in tools):
        ctx.results.notes.append("mpi: MPICH's spawn skipped (mpiexec.hydra is not available)")
        return
    prog = ctx.work / "pmi_spawn"
    build = subprocess.run(["cc", "-O2", "-o", str(prog), str(PMI_SPAWN_SOURCE),
                            "-l:libmpich.a"], capture_output=True, text=True)
    if build.returncode != 0:
        ctx.fail(f"mpi: cc could not build pmi_spawn.c against libmpich.a (libmpich-dev): "
                 f"{build.stderr[-300:]}")
        return
    case = "MPICH's spawn (PMI-1): rank 0 of 2 spawns 4 processes on 2 hosts"
    call = ctx.results.metric(SECTION, case, "PMI_Spawn_multiple, call to return", "s")
    up = ctx.results.metric(SECTION, case, "call to every child through its first barrier",
                            "s")

    def command(t):
        cmd = t.command(host_list(2, 3), 2, [str(prog), "parent", "1", "3"])
        # One rank per host: the children take two free slots on each.
        cmd[1:1] = ["--map-by", "node"] if t.key == "ferryrun" else ["-ppn", "1"]
        return cmd

    def record(t, rnd, r) -> bool:
        m = re.search(r"spawn_call ([0-9.]+) return ([0-9.]+)", r.stderr)
        ups = [float(x) for x in re.findall(r"child_up ([0-9.]+)", r.stderr)]
        if r.returncode != 0 or not m or len(ups) != 4:
            return False
        call.add(t.key, rnd, float(m.group(2)) - float(m.group(1)))
        up.add(t.key, rnd, max(ups) - float(m.group(1)))
        return True

    spawn_jobs(ctx, tools, env, case, command, record)


def spawn_jobs(ctx, tools, env, case, command, record) -> None:
    """Each of `tools` runs `command(tool)` `runs` times a round, the tools rotated by round;
    `record(tool, round, result)` takes a run's figures, False for a failed run (said, and
    that tool's round ends there, as after a hang)."""
    s = ctx.sizes
    runs = 3 if s.launch_rounds > 2 else 1
    for rnd in range(s.launch_rounds):
        for t in [t for t in ctx.rotated(rnd) if t in tools]:
            cmd = command(t)
            for _ in range(runs):
                try:
                    r, _ = run_job(ctx, f"mpi {case}, {t.label}", cmd, env, s.run_timeout_s)
                except subprocess.TimeoutExpired:
                    ctx.fail(f"mpi {case}: {t.label} hung")
                    ctx.check_idle(f"mpi {case}")
                    break
                if not record(t, rnd, r):
                    ctx.fail(f"mpi {case}: {t.label} failed (exit {r.returncode}): "
                             f"{(r.stdout + r.stderr).strip()[-300:]}")
                    break
                ctx.check_idle(f"mpi {case}")


def mpmd_job(tool, hosts, parts, argv):
    """An MPMD line: the first part's -np on the launcher's own line, then `: -np N argv` for
    each later part (after ferryrun's `--` a ':' would be a plain word: it goes)."""
    cmd = tool.command(hosts, parts[0], argv)
    if "--" in cmd:
        cmd.remove("--")
    for n in parts[1:]:
        cmd += [":", "-np", str(n)] + argv
    return cmd


def mpmd_case(ctx, tools, env, prog) -> None:
    """An MPMD job's start: `-np 1 prog : -np 3 prog` (a controller and its workers) on 2
    hosts x 2 slots, MPI_Init+Barrier+Finalize in one world of 4, under both launchers."""
    s = ctx.sizes
    hosts, parts = host_list(2, 2), [1, 3]
    case = "2 hosts x 2 ranks, MPMD (-np 1 A : -np 3 B)"
    metric = ctx.results.metric(SECTION, case, "wall time of MPI_Init+Barrier+Finalize", "s")
    argv = [str(prog), "init"]
    for t in tools:  # a warm-up run that also checks the world: one of 4, not two
        r, _ = run_job(ctx, f"mpi {case}, {t.label} warm-up", mpmd_job(t, hosts, parts, argv),
                       env, s.run_timeout_s)
        if r.returncode != 0 or "size 4" not in r.stdout:
            ctx.fail(f"mpi {case}: {t.label} did not run one world of 4 (exit {r.returncode}): "
                     f"{(r.stdout + r.stderr).strip()[-300:]}")
            return
    for rnd in range(s.launch_rounds):
        order = [t for t in ctx.rotated(rnd) if t in tools]
        ctx.log(f"  mpi: {case}: round {rnd + 1}/{s.launch_rounds}")
        named = [(t.key, mpmd_job(t, hosts, parts, argv)) for t in order]
        hyperfine_round(ctx, case, rnd, named, "mpi-mpmd", env, metric)


def hyperfine_round(ctx, case, rnd, named, raw_name, env, metric) -> bool:
    """One round of `named` ((tool key, command) pairs) under hyperfine, cold, each run's
    wall time into `metric`; the JSON kept as raw/RAW_NAME-roundN.json. False when a
    launcher failed or hyperfine did not finish (said with ctx.fail)."""
    s = ctx.sizes
    json_path = ctx.out / "raw" / f"{raw_name}-round{rnd + 1}.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["hyperfine", "-N", "--runs", str(s.launch_runs), "--style", "basic",
           "--export-json", str(json_path)]
    for key, argv in named:
        cmd += ["--command-name", key, shlex.join(argv)]
    ok = False
    try:
        r, _ = run_job(ctx, f"mpi {case}, round {rnd + 1}", cmd, env,
                       s.run_timeout_s * len(named) * s.launch_runs)
        if r.returncode != 0:
            ctx.fail(f"mpi {case}, round {rnd + 1}: a launcher failed: {r.stderr.strip()[-300:]}")
        else:
            for res in json.loads(json_path.read_text())["results"]:
                for value in res["times"]:
                    metric.add(res["command"], rnd, value)
            ok = True
    except subprocess.TimeoutExpired:
        ctx.fail(f"mpi {case}, round {rnd + 1}: hyperfine did not finish")
    ctx.check_idle(f"mpi {case} round {rnd + 1}")
    return ok


def job(tool, hosts, np, argv):
    cmd = tool.command(hosts, np, argv)
    if tool.key == "openmpi" and np > sum(s for _, s in hosts):
        cmd.insert(1, "--oversubscribe")
    return cmd


def finalize_crash(returncode: int, output: str) -> bool:
    """A rank killed by SIGSEGV: Open MPI 4.1's race in MPI_Finalize (the module's docstring)."""
    return returncode == 139 or "exit code: 139" in output


def run_job(ctx, what, cmd, env, timeout) -> tuple[subprocess.CompletedProcess, float]:
    """Runs an MPI job once, or twice where the first died of the Open MPI finalize crash (the
    first try then goes to the report's notes). Returns the last try and the machine's CPU
    seconds during it."""
    def once():
        before = busy_cpu_seconds()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        return r, busy_cpu_seconds() - before

    r, used = once()
    if r.returncode != 0 and finalize_crash(r.returncode, r.stdout + r.stderr):
        ctx.log(f"  {what}: a rank died of SIGSEGV; run again")
        tail = " | ".join((r.stdout + r.stderr).strip().splitlines()[-6:])
        ctx.results.notes.append(f"{what}: a rank died of SIGSEGV (exit {r.returncode}), "
                                 f"run again: {tail[-300:]}")
        ctx.check_idle(f"{what}, after the crash")
        r, used = once()
    return r, used


def ferry_mtl(ctx, env) -> str:
    """The OMPI_MCA_mtl ferryd gives an Open MPI rank on this machine ("" if none)."""
    ferry = next(t for t in ctx.tools if t.key == "ferryrun")
    r = subprocess.run(ferry.command([("localhost", 1)], 1,
                                     ["sh", "-c", 'echo "mtl=$OMPI_MCA_mtl"']),
                       capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
                       timeout=ctx.sizes.run_timeout_s)
    m = re.search(r"mtl=(\S*)", r.stdout)
    return m.group(1) if r.returncode == 0 and m else ""


def build_program(ctx: Context) -> Path | None:
    """bench/mpi_bench.c built with mpicc.openmpi, or $FERRY_BENCH_MPI_PROG: the same program
    built elsewhere, for a machine with Open MPI's run time and no compiler (bench/chroot)."""
    given = os.environ.get("FERRY_BENCH_MPI_PROG")
    if given:
        if not os.access(given, os.X_OK):
            ctx.fail(f"mpi: FERRY_BENCH_MPI_PROG={given} is not an executable file")
            return None
        return Path(given)
    if not shutil.which("mpicc.openmpi"):
        ctx.results.notes.append("mpi: skipped (mpicc.openmpi not installed: libopenmpi-dev)")
        return None
    prog = ctx.work / "mpi_bench"
    build = subprocess.run(["mpicc.openmpi", "-O2", "-o", str(prog), str(SOURCE)],
                           capture_output=True, text=True)
    if build.returncode != 0:
        ctx.fail(f"mpi: mpicc.openmpi could not build mpi_bench.c: {build.stderr[-300:]}")
        return None
    return prog


def launch_case(ctx, tools, env, prog, hosts_n, per_host, variant=""):
    s = ctx.sizes
    case = f"{hosts_n} hosts x {per_host} ranks{variant}"
    hosts = host_list(hosts_n, per_host)
    metric = ctx.results.metric(SECTION, case, "wall time of MPI_Init+Barrier+Finalize", "s")
    if not variant:
        machine_cpu = ctx.results.metric(SECTION, case, "CPU time, whole machine", "s")
        ranks_cpu = ctx.results.metric(SECTION, case, "CPU time of the ranks", "s")
    for t in tools:  # a warm-up run that also checks the world
        r, _ = run_job(ctx, f"mpi {case}, {t.label} warm-up",
                       job(t, hosts, hosts_n * per_host, [str(prog), "init"]), env,
                       s.run_timeout_s)
        if r.returncode != 0 or f"size {hosts_n * per_host}" not in r.stdout:
            ctx.fail(f"mpi {case}: {t.label} did not run one world (exit {r.returncode}): "
                     f"{(r.stdout + r.stderr).strip()[-300:]}")
            return
    for rnd in range(s.launch_rounds):
        order = [t for t in ctx.rotated(rnd) if t in tools]
        ctx.log(f"  mpi: {case}: round {rnd + 1}/{s.launch_rounds}")
        tail = "-mtl" if variant else ""
        named = [(t.key, job(t, hosts, hosts_n * per_host, [str(prog), "init"])) for t in order]
        if not hyperfine_round(ctx, case, rnd, named, f"mpi-{hosts_n}x{per_host}{tail}", env,
                               metric):
            continue
        if not variant:
            for t in order:
                cpu_run(ctx, t, env, prog, hosts, hosts_n * per_host, rnd, machine_cpu, ranks_cpu)
    if not variant:
        cpu_floor_note(ctx, case, metric, ranks_cpu)


def busy_cpu_seconds() -> float:
    """User and system time of every CPU so far (nice, idle, iowait and steal left out)."""
    with open("/proc/stat", encoding="ascii") as f:
        v = [int(x) for x in f.readline().split()[1:8]]
    user, _nice, system, _idle, _iowait, irq, softirq = v
    return (user + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def cpu_run(ctx, t, env, prog, hosts, np, rnd, machine_cpu, ranks_cpu) -> None:
    """One `init` job of `t`: the machine's and the ranks' CPU seconds."""
    try:
        r, used = run_job(ctx, f"mpi CPU time, {t.label}, round {rnd + 1}",
                          job(t, hosts, np, [str(prog), "init"]), env, ctx.sizes.run_timeout_s)
    except subprocess.TimeoutExpired:
        ctx.fail(f"mpi CPU time: {t.label} hung")
        return
    ranks = [float(x) for x in re.findall(r"rank_cpu_s ([0-9.]+)", r.stdout)]
    if r.returncode != 0 or len(ranks) != np:
        ctx.fail(f"mpi CPU time: {t.label} failed (exit {r.returncode}, {len(ranks)} of {np} "
                 f"ranks said their CPU time): {(r.stdout + r.stderr).strip()[-300:]}")
        return
    machine_cpu.add(t.key, rnd, used)
    ranks_cpu.add(t.key, rnd, sum(ranks))
    ctx.check_idle(f"mpi CPU time, {t.label}")


def cpu_floor_note(ctx, case, wall, ranks_cpu) -> None:
    """The note: the least wall time the ranks' own CPU time allows on this machine's CPUs,
    and the most a launcher could then be ahead of mpirun."""
    ferry = summarize(ranks_cpu.by_tool["ferryrun"].samples()) \
        if "ferryrun" in ranks_cpu.by_tool else None
    mpirun = summarize(wall.by_tool["openmpi"].samples()) if "openmpi" in wall.by_tool else None
    if not ferry or not mpirun:
        return
    cpus = os.cpu_count() or 1
    floor = ferry.median / cpus
    ctx.results.notes.append(
        f"mpi {case}: the ranks alone used {ferry.median:.2f} CPU-s under ferryrun; on this "
        f"machine's {cpus} CPUs no launcher can run the job in less than {floor:.2f} s, "
        f"{mpirun.median / floor:.1f}x mpirun's {mpirun.median:.2f} s at best")


def latency_case(ctx, tools, env, prog, label, hosts_n, per_host, mode):
    s = ctx.sizes
    iters = 2000 if s.launch_rounds > 2 else 300
    hosts = host_list(hosts_n, per_host) if per_host <= 2 else [("fnode1", per_host)]
    metric = ctx.results.metric(SECTION, label, "latency", "us")
    for rnd in range(s.launch_rounds):
        for t in [t for t in ctx.rotated(rnd) if t in tools]:
            try:
                r, _ = run_job(ctx, f"mpi {label}, {t.label}",
                               job(t, hosts, hosts_n * per_host, [str(prog), mode, str(iters)]),
                               env, s.run_timeout_s)
            except subprocess.TimeoutExpired:
                ctx.fail(f"mpi {label}: {t.label} hung")
                ctx.check_idle(f"mpi {label}")
                continue
            m = re.search(r"latency_us ([0-9.]+)", r.stdout)
            if r.returncode != 0 or not m:
                ctx.fail(f"mpi {label}: {t.label} failed (exit {r.returncode}): "
                         f"{(r.stdout + r.stderr).strip()[-300:]}")
                continue
            metric.add(t.key, rnd, float(m.group(1)))
            ctx.check_idle(f"mpi {label}")
