"""Launch inside a Slurm allocation: `true`, one rank per node, on a real Slurm cluster
(tests/cluster/ferry-slurm: slurmctld, munged, one slurmd per node namespace).

Five launchers, interleaved, inside one `salloc -N N --ntasks-per-node=1` per size:

- ferryrun `--launcher slurm`: one srun step starts every ferryd, which connects back.
- ferryrun `--launcher ssh`: the same allocation's nodes over SSH. ferry-slurm's nodes
  have no sshd, so this section starts one in each node's namespaces (those of its
  slurmd: network, hostname, /etc/hosts), configured as ferry-cluster's are (port 2222,
  key-only, root's light .bashrc), and stops them with the cluster.
- bare `srun -N N -n N true`: what one step costs, the floor for all of them.
- Open MPI `mpirun --mca plm slurm` (orteds started by one srun step).
- MPICH `mpiexec.hydra -launcher slurm -iface ferrysbr0` (proxies started by srun; without
  -iface the proxies try to reach mpiexec by this machine's host name and give up).

The runs happen in slurm_driver.py under salloc; this side starts the cluster and the
sshds, writes the driver's spec, and turns its JSON into metrics.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from .context import Context

SECTION = "scale-slurm"
STATE = Path("/tmp/ferry-bench-slurm")
NET_PREFIX = "10.233.0"
DRIVER = Path(__file__).resolve().parent / "slurm_driver.py"


class Column:
    def __init__(self, key: str, label: str):
        self.key, self.label = key, label


COLUMNS = [Column("ferry-slurm", "ferryrun (srun)"), Column("ferry-ssh", "ferryrun (SSH)"),
           Column("srun", "bare srun"), Column("openmpi", "Open MPI (plm slurm)"),
           Column("hydra", "hydra (-launcher slurm)")]


def slurm_env(script: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["FERRY_SLURM_DIR"] = str(STATE)
    out = subprocess.run([str(script), "env"], env=env, capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        if line.startswith("export ") and "=" in line:
            k, v = line[len("export "):].split("=", 1)
            env[k] = shlex.split(v)[0] if v else ""
    env["PATH"] = f"{STATE}/bin:{env['PATH']}"
    return env


def write_ssh_files(ssh_dir: Path, n: int) -> None:
    """Client and host keys, sshd_config per node, ssh_config and known_hosts."""
    ssh_dir.mkdir(parents=True, exist_ok=True)
    for name in ("id_ed25519", "host_key"):
        if not (ssh_dir / name).exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            str(ssh_dir / name)], check=True)
    (ssh_dir / "authorized_keys").write_text((ssh_dir / "id_ed25519.pub").read_text())
    host_key = " ".join((ssh_dir / "host_key.pub").read_text().split()[:2])
    cfg, known = [], []
    for i in range(1, n + 1):
        addr = f"{NET_PREFIX}.{10 + i}"
        cfg += [f"Host snode{i}", f"  HostName {addr}", "  Port 2222", "  User root",
                f"  IdentityFile {ssh_dir}/id_ed25519",
                f"  UserKnownHostsFile {ssh_dir}/known_hosts", "  StrictHostKeyChecking yes",
                "  IdentitiesOnly yes", "  LogLevel ERROR", ""]
        known += [f"[snode{i}]:2222 {host_key}", f"[{addr}]:2222 {host_key}"]
        (ssh_dir / f"sshd_config.{i}").write_text("\n".join([
            "Port 2222", "AddressFamily inet", "ListenAddress 0.0.0.0",
            f"HostKey {ssh_dir}/host_key", f"PidFile {ssh_dir}/sshd.{i}.pid",
            f"AuthorizedKeysFile {ssh_dir}/authorized_keys",
            "PermitRootLogin prohibit-password", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", "UseDNS no",
            "MaxStartups 100:30:200", "MaxSessions 50", "PrintMotd no", "PrintLastLog no",
            "X11Forwarding no", "Subsystem sftp internal-sftp", ""]))
    (ssh_dir / "ssh_config").write_text("\n".join(cfg))
    (ssh_dir / "known_hosts").write_text("\n".join(known) + "\n")
    (ssh_dir / "node_bashrc").write_text(f"export PATH={shlex.quote(os.environ['PATH'])}\n")


def start_sshds(ssh_dir: Path, n: int) -> None:
    """One sshd per Slurm node, in the namespaces of that node's slurmd."""
    Path("/run/sshd").mkdir(exist_ok=True)
    bashrc = Path(os.path.expanduser("~root")) / ".bashrc"
    for i in range(1, n + 1):
        pid = (STATE / "run" / f"slurmd-snode{i}.pid").read_text().strip()
        mount = (f"mount --bind {ssh_dir}/node_bashrc {bashrc} && " if bashrc.exists()
                 else "")
        subprocess.Popen(
            ["setsid", "nsenter", "-t", pid, "-n", "-u", "-m", "unshare", "--mount",
             "--propagation", "slave", "sh", "-c",
             f"{mount}exec /usr/sbin/sshd -D -f {ssh_dir}/sshd_config.{i} "
             f"-E {ssh_dir}/sshd.{i}.log"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20 + n / 4
    for i in range(1, n + 1):
        while subprocess.run(["bash", "-c", f"exec 3<>/dev/tcp/{NET_PREFIX}.{10 + i}/2222"],
                             stderr=subprocess.DEVNULL).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError(f"sshd on snode{i} does not answer (log {ssh_dir}/sshd.{i}.log)")
            time.sleep(0.1)


def tool_specs(ctx: Context, n: int, ssh_dir: Path) -> list[dict]:
    ferryrun = str(ctx.ferry().exe)
    mpirun = ctx.tools[1].exe if len(ctx.tools) > 1 else "mpirun.openmpi"
    base = {
        "ferry-slurm": [ferryrun, "--launcher", "slurm", "--tag-style", "none"],
        "ferry-ssh": [ferryrun, "--launcher", "ssh", "--ssh-config",
                      str(ssh_dir / "ssh_config"), "--tag-style", "none"],
        "srun": ["srun", "-N", str(n), "-n", str(n)],
        "openmpi": [mpirun, "--allow-run-as-root", "--mca", "plm", "slurm", "-np", str(n)],
        "hydra": ["mpiexec.hydra", "-launcher", "slurm", "-iface", "ferrysbr0", "-n", str(n)],
    }
    present = {t.key for t in ctx.tools}
    return [{"key": k, "cmd": v + ["true"], "check": v + ["hostname"]}
            for k, v in base.items()
            if k.startswith("ferry") or k == "srun" or k in present]


def run(ctx: Context) -> None:
    s = ctx.sizes
    script = ctx.cluster.script.parent / "ferry-slurm"
    nodes = max(s.scale_slurm_nodes)
    ctx.results.columns[SECTION] = COLUMNS
    with ctx.cluster._locked("scale in Slurm"):
        ctx.log(f"  scale-slurm: ferry-slurm up {nodes}")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["FERRY_SLURM_DIR"] = str(STATE)
        started = time.monotonic()
        r = subprocess.run([str(script), "up", str(nodes)], env=env, capture_output=True,
                           text=True)
        if r.returncode != 0:
            ctx.fail(f"ferry-slurm up {nodes} failed: {(r.stderr or r.stdout).strip()[-400:]}")
            subprocess.run([str(script), "down"], env=env, capture_output=True)
            return
        ctx.results.notes.append(f"ferry-slurm up {nodes} took "
                                 f"{time.monotonic() - started:.0f} s")
        try:
            measure(ctx, script, nodes)
        finally:
            subprocess.run([str(script), "down"], env=env, capture_output=True)


def measure(ctx: Context, script: Path, nodes: int) -> None:
    s = ctx.sizes
    env = slurm_env(script)
    ssh_dir = ctx.work / "slurm-ssh"
    write_ssh_files(ssh_dir, nodes)
    start_sshds(ssh_dir, nodes)
    for n in s.scale_slurm_nodes:
        case = f"{n} nodes x 1"
        spec_file, out_file = ctx.work / f"slurm-{n}.json", ctx.out / "raw" / f"slurm-{n}.json"
        spec_file.write_text(json.dumps({"rounds": s.scale_slurm_rounds,
                                         "hang_s": s.scale_hang_s,
                                         "tools": tool_specs(ctx, n, ssh_dir)}))
        ctx.log(f"  scale-slurm: {case}: salloc -N{n}, {s.scale_slurm_rounds} rounds")
        cmd = ["salloc", "-N", str(n), "--ntasks-per-node=1", sys.executable, str(DRIVER),
               str(spec_file), str(out_file)]
        limit = s.scale_hang_s * 5 * (s.scale_slurm_rounds + 1) + 60
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=limit,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            ctx.fail(f"scale-slurm {case}: salloc did not end within {limit} s")
            continue
        if r.returncode != 0 or not out_file.exists():
            ctx.fail(f"scale-slurm {case}: the driver failed (exit {r.returncode}): "
                     f"{r.stderr.strip()[-400:]}")
            continue
        record(ctx, case, json.loads(out_file.read_text()))


def record(ctx: Context, case: str, res: dict) -> None:
    wall = ctx.results.metric(SECTION, case, "wall time of `true`", "s")
    cpu = ctx.results.metric(SECTION, case, "front-end CPU (incl. srun / ssh)", "s")
    for key, c in res["checks"].items():
        if c["hung"]:
            ctx.results.notes.append(f"scale-slurm {case}: {key} hung running hostname")
        elif not c["ok"]:
            ctx.fail(f"scale-slurm {case}: {key} `hostname` exited {c['rc']} with "
                     f"{c['lines']} lines for {len(res['nodes'])} nodes: {c['err'].strip()}")
    for run in res["runs"]:
        if run["hung"]:
            ctx.results.notes.append(f"scale-slurm {case}: {run['key']} hung in round "
                                     f"{run['round'] + 1}")
        elif run["rc"] != 0:
            ctx.fail(f"scale-slurm {case}: {run['key']} exited {run['rc']}: "
                     f"{run['err'].strip()}")
        else:
            wall.add(run["key"], run["round"], run["wall"])
            cpu.add(run["key"], run["round"], run["cpu"])
    ctx.results.legends[SECTION] = (
        "Inside `salloc -N N --ntasks-per-node=1` on tests/cluster/ferry-slurm, `true` as "
        "one rank per node. `ferryrun (srun) vs X`: one ratio per round (launchers "
        "interleaved, each run after the previous step has left the allocation), median "
        "[min-max]; above 1: ferryrun over srun was faster. Front-end CPU: the launcher and "
        "the children it reaped (srun, ssh).")
