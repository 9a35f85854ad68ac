"""Docker layouts: ferryrun's launch time and output throughput into real containers,
next to the bare network namespaces of the simulated cluster, in one run.

Four layouts, 2 hosts x 2 slots each, all reached from the same place:

- `bridge`: the two workers of docker/compose.bridge.yml (project ferry-bench-bridge),
  each reached through a port the Docker machine publishes (BRIDGE_PORTS) and Docker's
  NAT into the container's private address;
- `host`: the two workers of docker/compose.host.yml (project ferry-bench-host), sshd
  on their own ports (HOST_PORTS) of the machine's own network stack;
- `netns`: the cluster's hosts fnode2 and fnode3 (network namespaces, sshd on 2222);
- `podman`: the same two workers of docker/compose.bridge.yml, the same image (copied from
  Docker with `docker save | podman load`), brought up by the same docker-compose against
  Podman's Docker API (`podman system service`, project ferry-bench-podman-bridge) on
  PODMAN_PORTS: Podman's bridge (CNI) against Docker's, everything else alike. Skipped with a
  note when Podman is not installed.

ferryrun runs inside the cluster host fnode1 for all of them, so every layout is "another
machine on the LAN": the containers are reached at 10.231.0.1 (the cluster bridge's
address in the root namespace, that is the Docker machine), fnode2/fnode3 at their own
addresses. It is entered the way `ferry-cluster exec fnode1` does it (nsenter into the
namespaces of fnode1's sshd), without the script's bash around every timed run.

Workloads: the launch of `true` as 4 ranks (hyperfine, or a timing loop without it),
and 4 ranks each writing `docker_mb` MB of 100-byte lines, checked byte for byte and
line for line with the throughput section's generator and checker. Every round runs
the layouts back to back in a rotated order, so load on the shared machine hits
all of them alike; ratios are taken per round against the bare namespaces.

The containers run the image's own ferryd (/opt/ferry/bin/ferryd, built from the source
tree by docker/Dockerfile); fnode2/fnode3 run build/bin/ferryd. The section brings its
own Compose projects up (with its own project names and ports, so a test suite using
the default ones can run beside it) and always takes them down again (`down -v`), also
on failure, Ctrl-C or SIGTERM. No Docker engine, no docker-compose, no worker image or
no client key: the section is skipped with a note, never failed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .context import Context
from .proc import Sink, timed_run
from .results import BenchError
from .throughput import GEN, LINE, check_output

SECTION = "docker"
DOCKER = "/usr/bin/docker"       # Debian's 20.10 client (as tests/docker/ferry-docker)
COMPOSE = "docker-compose"       # 1.29
MACHINE_ADDR = "10.231.0.1"      # the Docker machine as the cluster's hosts see it
IMAGE_FERRYD = "/opt/ferry/bin/ferryd"
FRONT = "fnode1"                 # where ferryrun runs, for every layout
NETNS_HOSTS = [("fnode2", 2), ("fnode3", 2)]
# Not the defaults of the compose files (2201/2202, 2222/2223) nor the test suite's:
# the bench's containers can run while the Docker scenarios run theirs.
BRIDGE_PORTS = (2211, 2212)
HOST_PORTS = (2232, 2233)
PODMAN_PORTS = (2241, 2242)
PODMAN = "podman"
# dockerd sets the FORWARD policy to DROP and lets through only its own bridges: Podman's
# published ports are then out of reach from the other machines (fnode1). What a site with
# both engines does (docs/docker.md, "Podman"), for the section's duration.
FORWARD_PODMAN = "-I DOCKER-USER -o cni-podman+ -j ACCEPT"
# Podman asks for a million open files and processes by default; a podman without
# CAP_SYS_RESOURCE (the machine itself a container) cannot grant them: a Compose override
# for the Podman project asks for what is there (docs/docker.md, "Podman").
PODMAN_LIMITS = "".join(f"  worker{i}:\n    ulimits:\n      nofile: 4096\n      nproc: 4096\n"
                        for i in (0, 1))
SLOTS = 2
MACHINE_NAME = "ferry-bench"     # bridge containers' hostnames: ferry-bench-worker0/1
# Shown by every rank of the placement check: where it runs and what its PID 1 is
# (docker-init inside the containers, the machine's init in the namespaces).
WHERE = 'echo "$HOROVOD_HOSTNAME $(hostname) $(cat /proc/1/comm)"'


@dataclass
class Layout:
    """One way of reaching the 2 x 2 slots: a column of the tables."""

    key: str
    label: str
    ssh_config: Path
    hosts: list[tuple[str, int, int | None]]   # (address, slots, port or None)
    in_container: bool
    accept_new: bool = False
    project: "Project | None" = None
    init: str = "docker-init"   # the containers' PID 1 (Podman's --init: podman-init)

    def expected(self) -> Counter:
        """The first and last word of WHERE's lines, counted: HOROVOD_HOSTNAME and PID 1."""
        out = Counter()
        for addr, slots, port in self.hosts:
            key = f"{addr}:{port}" if port else addr
            out[(key, self.init if self.in_container else "not-an-init")] += slots
        return out

    def argv(self, ctx: Context, front: list[str], hostfile: Path, ranks: int,
             cmd: list[str]) -> list[str]:
        ferryrun = str(ctx.ferry().bin_dir / "ferryrun")  # absolute: nsenter changes cwd
        out = front + [ferryrun, "--ssh-config", str(self.ssh_config)]
        if self.accept_new:
            out.append("--ssh-accept-new")
        if self.in_container:
            out += ["--hostfile", str(hostfile)]
        else:
            out += ["-H", ",".join(f"{h}:{s}" for h, s, _ in self.hosts)]
        return out + ["-np", str(ranks), "--tag-style", "none", "--"] + cmd


@dataclass
class DockerSetup:
    """The engine, image and client key the section needs (tests/docker/ferry-docker's)."""

    image: str = "ferry-worker:test"
    key: Path = Path("/tmp/ferry-docker/id_ed25519")
    engine: str = "?"
    image_id: str = "?"

    @classmethod
    def find(cls, src: Path) -> "DockerSetup":
        s = cls()
        env = {}
        try:
            r = subprocess.run([str(src / "tests" / "docker" / "ferry-docker"), "env"],
                               capture_output=True, text=True, timeout=20)
            for line in r.stdout.splitlines():
                k, _, v = line.removeprefix("export ").partition("=")
                env[k] = v
        except (OSError, subprocess.TimeoutExpired):
            pass
        env.update({k: v for k, v in os.environ.items()
                    if k in ("FERRY_DOCKER_WORKER_IMAGE", "FERRY_DOCKER_KEY")})
        s.image = env.get("FERRY_DOCKER_WORKER_IMAGE", s.image)
        s.key = Path(env.get("FERRY_DOCKER_KEY", str(s.key)))
        return s

    def unavailable(self) -> str | None:
        """None when the section can run, else why not."""
        if not os.access(DOCKER, os.X_OK):
            return f"no Docker client {DOCKER} (apt-get install docker.io)"
        if not shutil.which(COMPOSE):
            return f"no {COMPOSE} (apt-get install docker-compose)"
        try:
            r = subprocess.run([DOCKER, "version", "-f", "{{.Server.Version}}"],
                               capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            return "the Docker engine does not answer (20 s)"
        if r.returncode != 0:
            return "no Docker engine answers (tests/docker/ferry-docker up starts one)"
        self.engine = r.stdout.strip()
        r = subprocess.run([DOCKER, "image", "inspect", "-f", "{{.Id}} {{.Created}}",
                            self.image], capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            return f"no image {self.image} (tests/docker/ferry-docker up builds it)"
        iid, _, created = r.stdout.strip().partition(" ")
        self.image_id = f"{iid.removeprefix('sha256:')[:12]}, built {created[:16]}"
        for p in (self.key, Path(f"{self.key}.pub")):
            if not os.access(p, os.R_OK):
                return f"no client key {p} (tests/docker/ferry-docker up makes it)"
        return None


@dataclass
class Project:
    """One Compose project of the bench: up, answering SSH, down."""

    mode: str              # bridge | host
    ports: tuple[int, int]
    setup: DockerSetup
    src: Path
    log_dir: Path
    containers: list[str] = field(default_factory=list)
    engine: str = "docker"        # docker | podman (through docker_host, its Docker API)
    docker_host: str = ""
    overrides: list[Path] = field(default_factory=list)   # more -f files

    @property
    def name(self) -> str:
        return f"ferry-bench-{self.mode}" if self.engine == "docker" else f"ferry-bench-{self.engine}-{self.mode}"

    def compose(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        env = dict(os.environ, **({"DOCKER_HOST": self.docker_host} if self.docker_host else {}))
        env.update(FERRY_WORKER_IMAGE=self.setup.image,
                   FERRY_AUTHORIZED_KEYS=f"{self.setup.key}.pub",
                   FERRY_WORKER0_PORT=str(self.ports[0]), FERRY_WORKER1_PORT=str(self.ports[1]),
                   FERRY_MACHINE_NAME=MACHINE_NAME)
        cmd = [COMPOSE, "-p", self.name, "-f", str(self.src / "docker" / f"compose.{self.mode}.yml"),
               *[a for o in self.overrides for a in ("-f", str(o))], *args]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def up(self) -> None:
        # Whatever an interrupted earlier run of this project left (our names only).
        self.compose("down", "-v", "--remove-orphans")
        r = self.compose("up", "-d", "--no-build")
        (self.log_dir / f"compose-{self.name}.log").write_text(r.stdout + r.stderr)
        if r.returncode != 0:
            raise BenchError(f"docker-compose up ({self.name}) failed: "
                             f"{r.stderr.strip()[-400:]}")
        self.containers = self.compose("ps", "-q").stdout.split()
        if len(self.containers) != 2:
            raise BenchError(f"{self.name}: expected 2 containers, got "
                             f"{len(self.containers)}")

    def wait_ssh(self, timeout_s: float = 30.0) -> None:
        """Until both sshds send their banner at MACHINE_ADDR (the address used)."""
        for port in self.ports:
            deadline = time.monotonic() + timeout_s
            while not banner(MACHINE_ADDR, port):
                if time.monotonic() > deadline:
                    raise BenchError(f"{self.name}: no SSH banner at {MACHINE_ADDR}:{port} "
                                     f"within {timeout_s:.0f} s")
                time.sleep(0.2)

    def down(self) -> str:
        r = self.compose("down", "-v", "--remove-orphans")
        return "" if r.returncode == 0 else r.stderr.strip()[-300:]

    def job_processes(self) -> list[str]:
        """What runs in the containers besides their init and sshd listener."""
        left = []
        for c in self.containers:
            top = ([DOCKER, "top", c, "-eo", "pid,args"] if self.engine == "docker"
                   else [PODMAN, "top", c, "pid", "args"])
            r = subprocess.run(top, capture_output=True, text=True, timeout=20)
            for line in r.stdout.splitlines()[1:]:
                args = line.split(None, 1)[1] if len(line.split(None, 1)) > 1 else ""
                if args.startswith(("/sbin/docker-init", "/run/podman-init")) or (
                        args.startswith("sshd:") and "[listener]" in args):
                    continue
                left.append(f"{self.name} {c[:12]}: {line.strip()[:120]}")
        return left


def banner(addr: str, port: int) -> bool:
    try:
        with socket.create_connection((addr, port), timeout=2) as s:
            s.settimeout(2)
            return s.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def front_end(ctx: Context) -> list[str]:
    """The prefix that runs a command inside fnode1, as `ferry-cluster exec fnode1` does
    (nsenter into the namespaces of that host's sshd) but without its bash."""
    pid_file = ctx.cluster.state_dir / FRONT / "sshd.pid"
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return [str(ctx.cluster.script), "exec", FRONT]
    return ["nsenter", "-t", str(pid), "-n", "-u", "-m", "--"]


def run(ctx: Context) -> None:
    setup = DockerSetup.find(ctx.cluster.script.parent.parent.parent)
    why = setup.unavailable()
    if why:
        ctx.log(f"  SKIP docker: {why}")
        ctx.results.notes.append(f"docker layouts skipped: {why}")
        return
    # SIGTERM as Ctrl-C, so the containers come down in the finally below.
    def term(signum, frame):
        raise KeyboardInterrupt
    old_term = signal.signal(signal.SIGTERM, term)
    try:
        with ctx.cluster.session(3, "docker layouts") as cluster:
            if cluster.nodes < 3:
                ctx.results.notes.append(f"docker layouts skipped: needs 3 cluster hosts "
                                         f"(fnode1 runs ferryrun), the cluster has {cluster.nodes}")
                return
            _run(ctx, setup)
    finally:
        signal.signal(signal.SIGTERM, old_term)


def _run(ctx: Context, setup: DockerSetup) -> None:
    s = ctx.sizes
    src = ctx.cluster.script.parent.parent.parent
    d = ctx.out / "raw" / "docker"
    d.mkdir(parents=True, exist_ok=True)
    known = d / "known_hosts"
    known.write_text("")  # the containers' host keys are new with every `up` (down -v)
    cfg = d / "ssh_config"
    cfg.write_text("Host *\n  User root\n"
                   f"  IdentityFile {setup.key}\n  UserKnownHostsFile {known}\n"
                   "  IdentitiesOnly yes\n  LogLevel ERROR\n")
    projects = [Project("host", HOST_PORTS, setup, src, d),
                Project("bridge", BRIDGE_PORTS, setup, src, d)]
    podman = start_podman(ctx, setup, d)
    layouts = [
        Layout("netns", "bare netns", ctx.cluster.ssh_config,
               [(h, n, None) for h, n in NETNS_HOSTS], in_container=False),
        Layout("host", "Docker host", cfg, [(MACHINE_ADDR, SLOTS, p) for p in HOST_PORTS],
               in_container=True, accept_new=True, project=projects[0]),
        Layout("bridge", "Docker bridge", cfg, [(MACHINE_ADDR, SLOTS, p) for p in BRIDGE_PORTS],
               in_container=True, accept_new=True, project=projects[1]),
    ]
    if podman:
        limits = d / "podman-limits.yml"
        limits.write_text('version: "2.4"\nservices:\n' + PODMAN_LIMITS)
        projects.append(Project("bridge", PODMAN_PORTS, setup, src, d, engine="podman",
                                docker_host=podman.args[-1], overrides=[limits]))
        layouts.append(Layout("podman", "Podman bridge", cfg,
                              [(MACHINE_ADDR, SLOTS, p) for p in PODMAN_PORTS],
                              in_container=True, accept_new=True, project=projects[-1],
                              init="podman-init"))
    ranks = sum(n for _, n, _ in layouts[0].hosts)
    hostfiles = {}
    for lay in layouts:
        hostfiles[lay.key] = d / f"hosts-{lay.key}.txt"
        hostfiles[lay.key].write_text("".join(
            f"{a} slots={n}" + (f" port={p} ferryd={IMAGE_FERRYD}" if p else "") + "\n"
            for a, n, p in lay.hosts))
    ctx.results.columns[SECTION] = layouts
    ctx.results.legends[SECTION] = (
        "Columns: where the 4 ranks ran; ferryrun ran in the cluster host fnode1 for all "
        "of them. `bare netns vs X`: one ratio per round (layouts interleaved), median "
        "[min-max]; for times X / bare netns, for throughput bare netns / X. Above 1: the "
        "bare namespaces did better, i.e. what the Docker layout costs; below 1: the "
        "Docker layout did better.")
    ctx.results.environment["docker"] = (
        f"engine {setup.engine}, {subprocess.run([COMPOSE, 'version', '--short'], capture_output=True, text=True).stdout.strip() or '?'} "
        f"(docker-compose), image {setup.image} ({setup.image_id})")
    front = front_end(ctx)
    up_started = time.monotonic()
    try:
        for p in projects:
            ctx.log(f"  docker: {p.name} up (ports {p.ports[0]}, {p.ports[1]})")
            p.up()
        for p in projects:
            p.wait_ssh()
        ctx.results.notes.append(
            f"docker: both Compose projects up and answering SSH in "
            f"{time.monotonic() - up_started:.1f} s (not part of any figure)")
        for lay in layouts:
            verify(ctx, lay, front, hostfiles[lay.key], ranks)
        launch(ctx, layouts, front, hostfiles, ranks)
        throughput(ctx, layouts, front, hostfiles, ranks)
    finally:
        for p in projects:
            ctx.log(f"  docker: {p.name} down -v")
            try:
                err = p.down()
            except subprocess.TimeoutExpired:
                err = "timed out"
            if err:
                ctx.results.warnings.append(f"docker-compose down ({p.name}) failed: {err}")
        if podman:
            subprocess.run(["iptables", *FORWARD_PODMAN.replace("-I", "-D").split()],
                           capture_output=True)
            podman.terminate()
            try:
                podman.wait(timeout=20)
            except subprocess.TimeoutExpired:
                podman.kill()


def start_podman(ctx: Context, setup: DockerSetup, d: Path) -> subprocess.Popen | None:
    """Podman's Docker API on a socket of the section's own (docker-compose talks to it),
    with the worker image copied from Docker; None, with a note, where Podman is missing."""
    if not shutil.which(PODMAN):
        ctx.results.notes.append("docker: no Podman layout (apt-get install podman catatonit)")
        return None
    if subprocess.run([PODMAN, "image", "exists", setup.image]).returncode != 0:
        ctx.log(f"  docker: copying {setup.image} to Podman (docker save | podman load)")
        save = subprocess.Popen([DOCKER, "save", setup.image], stdout=subprocess.PIPE)
        r = subprocess.run([PODMAN, "load", "-q"], stdin=save.stdout, capture_output=True,
                           text=True)
        save.wait()
        if r.returncode != 0 or save.returncode != 0:
            raise BenchError(f"docker save | podman load of {setup.image} failed: "
                             f"{r.stderr.strip()[-300:]}")
    subprocess.run(["iptables", *FORWARD_PODMAN.split()], check=False, capture_output=True)
    sock = d / "podman.sock"
    sock.unlink(missing_ok=True)
    service = subprocess.Popen([PODMAN, "system", "service", "--time=0", f"unix://{sock}"],
                               stdout=subprocess.DEVNULL, stderr=open(d / "podman.log", "w"))
    deadline = time.monotonic() + 20
    while not sock.exists():
        if time.monotonic() > deadline or service.poll() is not None:
            service.kill()
            raise BenchError(f"podman system service did not start (see {d / 'podman.log'})")
        time.sleep(0.1)
    version = subprocess.run([PODMAN, "version", "-f", "{{.Client.Version}}"],
                             capture_output=True, text=True).stdout.strip()
    ctx.results.environment["podman"] = f"Podman {version}, its Docker API for docker-compose"
    return service


def idle(ctx: Context, lay: Layout, after: str) -> None:
    """Nothing of the job left on the layout's hosts (5 s grace), else a warning."""
    if lay.project is None:
        ctx.check_idle(after)
        return
    deadline = time.monotonic() + 5.0
    while True:
        left = lay.project.job_processes()
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if left:
        ctx.results.warnings.append(f"processes left in the containers 5 s after {after}: "
                                    + "; ".join(left[:5]))


def verify(ctx: Context, lay: Layout, front: list[str], hostfile: Path, ranks: int) -> None:
    """One untimed run that records the host keys and checks where the ranks ran."""
    cmd = lay.argv(ctx, front, hostfile, ranks, ["sh", "-c", WHERE])
    ctx.log(f"  docker: {lay.label}: checking placement (warm-up)")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                           timeout=ctx.sizes.run_timeout_s, env=ctx.cluster.env())
    except subprocess.TimeoutExpired:
        raise BenchError(f"ferryrun hung on the {lay.label} layout ({ctx.hang_report()})") from None
    if r.returncode != 0:
        raise BenchError(f"ferryrun failed on the {lay.label} layout (exit {r.returncode}): "
                         f"{r.stderr.strip()[-500:]}\n  command: {shlex.join(cmd)}")
    got = Counter()
    for line in r.stdout.splitlines():
        w = line.split()
        if w:
            got[(w[0], w[-1] if w[-1] in ("docker-init", "podman-init") else "not-an-init")] += 1
    if got != lay.expected():
        raise BenchError(f"{lay.label}: ranks did not run where they should: expected "
                         f"{dict(lay.expected())}, got {dict(got)}")
    idle(ctx, lay, f"{lay.label} placement check")


def rotated(layouts: list[Layout], rnd: int) -> list[Layout]:
    k = rnd % len(layouts)
    return layouts[k:] + layouts[:k]


def launch(ctx: Context, layouts: list[Layout], front: list[str], hostfiles, ranks: int) -> None:
    s = ctx.sizes
    case = f"launch `true`, {ranks} ranks on 2 hosts x 2"
    wall = ctx.results.metric(SECTION, case, "wall time", "s")
    cpu = ctx.results.metric(SECTION, case, "front-end CPU", "s")
    use_hyperfine = shutil.which("hyperfine") is not None
    if not use_hyperfine:
        ctx.results.notes.append("docker launch: hyperfine not found, timed with a loop "
                                 "(wall time of each run, front-end CPU from wait4)")
    for rnd in range(s.docker_rounds):
        order = rotated(layouts, rnd)
        ctx.log(f"  docker: launch round {rnd + 1}/{s.docker_rounds} "
                f"({', '.join(l.key for l in order)})")
        cmds = {l.key: l.argv(ctx, front, hostfiles[l.key], ranks, ["true"]) for l in order}
        if use_hyperfine:
            json_path = ctx.out / "raw" / f"docker-launch-round{rnd + 1}.json"
            cmd = ["hyperfine", "-N", "--runs", str(s.docker_launch_runs), "--style", "basic",
                   "--export-json", str(json_path)]
            for l in order:
                cmd += ["--command-name", l.key, shlex.join(cmds[l.key])]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, env=ctx.cluster.env(),
                                   stdin=subprocess.DEVNULL,
                                   timeout=s.run_timeout_s * len(order) * s.docker_launch_runs)
            except subprocess.TimeoutExpired:
                ctx.fail(f"docker launch round {rnd + 1}: hyperfine did not finish "
                         f"({ctx.hang_report()})")
                continue
            if r.returncode != 0:
                ctx.fail(f"docker launch round {rnd + 1}: hyperfine failed (ferryrun exited "
                         f"non-zero): {r.stderr.strip()[-300:]}")
                continue
            for res in json.loads(json_path.read_text())["results"]:
                for t in res["times"]:
                    wall.add(res["command"], rnd, t)
                cpu.add(res["command"], rnd, res["user"] + res["system"])
        else:
            for l in order:
                for _ in range(s.docker_launch_runs):
                    out, err = ctx.work / "dl.out", ctx.work / "dl.err"
                    r = timed_run(cmds[l.key], out, err, ctx.cluster.env(), s.run_timeout_s)
                    if r.rc != 0:
                        ctx.fail(f"ferryrun {'hung' if r.timed_out else f'exited {r.rc}'} "
                                 f"launching `true` on {l.label}, round {rnd + 1}: "
                                 f"{err.read_text(errors='replace')[-300:]}")
                        continue
                    wall.add(l.key, rnd, r.wall_s)
                    cpu.add(l.key, rnd, r.cpu_s)
        for l in order:
            idle(ctx, l, f"docker launch round {rnd + 1} ({l.label})")


def throughput(ctx: Context, layouts: list[Layout], front: list[str], hostfiles,
               ranks: int) -> None:
    s = ctx.sizes
    lines = s.docker_mb * 1_000_000 // LINE
    total_mb = ranks * lines * LINE / 1e6
    case = f"{ranks} ranks x {s.docker_mb} MB of lines, untagged"
    wall = ctx.results.metric(SECTION, case, "wall time", "s")
    rate = ctx.results.metric(SECTION, case, "throughput", "MB/s", lower_is_better=False)
    cpu = ctx.results.metric(SECTION, case, "front-end CPU", "s")
    torn = ctx.results.metric(SECTION, case, "torn lines", "lines")
    sink = Sink(ctx.work / "dt.out", ranks * lines * LINE)
    for rnd in range(s.docker_rounds):
        for lay in rotated(layouts, rnd):
            out = sink.path
            err = ctx.work / f"dt-{lay.key}.err"
            cmd = lay.argv(ctx, front, hostfiles[lay.key], ranks, ["sh", "-c", GEN, str(lines)])
            ctx.log(f"  docker: {case}: round {rnd + 1}/{s.docker_rounds} {lay.key}")
            r = timed_run(cmd, out, err, ctx.cluster.env(), timeout_s=s.run_timeout_s,
                          on_timeout=lambda: ctx.hang_report(), reuse_stdout=True)
            try:
                if r.rc != 0:
                    ctx.fail(f"ferryrun {'hung' if r.timed_out else f'exited {r.rc}'} in docker "
                             f"throughput on {lay.label}, round {rnd + 1}"
                             + (f" (killed after {s.run_timeout_s} s; {r.hang_info})"
                                if r.timed_out else f": {err.read_text(errors='replace')[-300:]}"))
                    continue
                c = check_output(out, ranks, False, length=r.out_bytes)
                ctx.debug(f"{lay.key}: {r.wall_s:.2f} s, {c.describe(ranks, lines)}")
                if not (c.lossless(ranks, lines) and c.intact(ranks, lines)):
                    ctx.fail(f"ferryrun lost or tore output in docker throughput on "
                             f"{lay.label}, round {rnd + 1}: {c.describe(ranks, lines)}")
                    continue
                torn.add(lay.key, rnd, c.torn_lines)
                wall.add(lay.key, rnd, r.wall_s)
                rate.add(lay.key, rnd, total_mb / r.wall_s)
                cpu.add(lay.key, rnd, r.cpu_s)
            finally:
                err.unlink(missing_ok=True)
                idle(ctx, lay, f"docker throughput on {lay.label}")
    sink.remove()
