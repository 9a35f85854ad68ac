"""docker/check's compose rules (DC2xx): what a ferry worker service needs."""

import os
import re

from dockerfile_rules import split_image

TOP_KEYS = {"version", "name", "services", "networks", "volumes", "configs", "secrets", "include", "models"}
SERVICE_KEYS = {
    "annotations", "attach", "build", "blkio_config", "cap_add", "cap_drop", "cgroup",
    "cgroup_parent", "command", "configs", "container_name", "cpu_count", "cpu_percent",
    "cpu_period", "cpu_quota", "cpu_rt_period", "cpu_rt_runtime", "cpu_shares", "cpus",
    "cpuset", "credential_spec", "depends_on", "deploy", "develop", "device_cgroup_rules",
    "devices", "dns", "dns_opt", "dns_search", "domainname", "entrypoint", "env_file",
    "environment", "expose", "extends", "external_links", "extra_hosts", "gpus",
    "group_add", "healthcheck", "hostname", "image", "init", "ipc", "isolation", "label_file",
    "labels", "links", "logging", "mac_address", "mem_limit", "mem_reservation", "mem_swappiness",
    "memswap_limit", "models", "network_mode", "networks", "oom_kill_disable", "oom_score_adj",
    "pid", "pids_limit", "platform", "ports", "post_start", "pre_stop", "privileged",
    "profiles", "provider", "pull_policy", "pull_refresh_after",
    "read_only", "restart", "runtime", "scale", "secrets", "security_opt", "shm_size",
    "stdin_open", "stop_grace_period", "stop_signal", "storage_opt", "sysctls", "tmpfs",
    "tty", "ulimits", "use_api_socket", "user", "userns_mode", "uts", "volumes", "volumes_from",
    "working_dir",
}  # the service properties of compose-spec/compose-spec schema/compose-spec.json (2026)
HOST_KEY_DIR = "/etc/ssh/host_keys"
AUTH_KEYS = "/etc/ferry/authorized_keys"


def interpolate(value, env, unset):
    """Compose interpolation: ${V}, ${V:-d}, ${V-d}, ${V:?e}, ${V?e}, ${V:+x}, $V, $$."""
    if isinstance(value, dict):
        return {interpolate(k, env, unset): interpolate(v, env, unset) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env, unset) for v in value]
    if not isinstance(value, str):
        return value
    pat = re.compile(r"\$\{(\w+)(?:(:?[-?+])((?:[^{}]|\{[^{}]*\})*))?\}|\$(\w+)")

    def repl(m):
        name = m.group(1) or m.group(4)
        op, word = m.group(2), m.group(3) or ""
        val = env.get(name)
        if op in (":-", "-"):
            if val is None or (op == ":-" and val == ""):
                return interpolate(word, env, unset)
            return val
        if op in (":?", "?"):
            if val is None or (op == ":?" and val == ""):
                unset.add(name)
                return f"/placeholder/{name}"
            return val
        if op in (":+", "+"):
            return interpolate(word, env, unset) if val else ""
        if val is None:
            unset.add(name)
            return ""
        return val

    out, i = [], 0
    while i < len(value):
        if value.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        m = pat.match(value, i)
        if m:
            out.append(repl(m))
            i = m.end()
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def env_of(service, path, f, line):
    env = service.get("environment", {})
    if isinstance(env, dict):
        return {str(k): ("" if v is None else str(v)) for k, v in env.items()}
    if isinstance(env, list):
        res = {}
        for item in env:
            if not isinstance(item, str):
                f.error(path, line, "DC212", f"environment entry {item!r} is not NAME=value")
                continue
            k, _, v = item.partition("=")
            res[k] = v
        return res
    f.error(path, line, "DC212", "environment must be a mapping or a list")
    return {}


def parse_port(spec):
    """Short ports syntax → (host_port or None, container_port, proto) or None if invalid."""
    if isinstance(spec, int):
        return (None, spec, "tcp")
    if isinstance(spec, dict):
        try:
            return (int(spec["published"]) if spec.get("published") is not None else None,
                    int(spec["target"]), spec.get("protocol", "tcp"))
        except (KeyError, ValueError, TypeError):
            return None
    s = str(spec)
    proto = "tcp"
    if "/" in s:
        s, proto = s.rsplit("/", 1)
    parts = s.split(":")
    if len(parts) == 3:
        parts = parts[1:]  # ip:host:container
    try:
        if len(parts) == 1:
            return (None, int(parts[0]), proto)
        if len(parts) == 2:
            return (int(parts[0]) if parts[0] else None, int(parts[1]), proto)
    except ValueError:
        return None
    return None


def volume_mounts(service):
    """→ list of (source, target, kind) from short or long syntax."""
    res = []
    for v in service.get("volumes", []) or []:
        if isinstance(v, dict):
            res.append((v.get("source"), v.get("target"), v.get("type", "volume")))
            continue
        parts = str(v).split(":")
        if len(parts) == 1:
            res.append((None, parts[0], "volume"))
            continue
        src, tgt = parts[0], parts[1]
        kind = "bind" if src.startswith(("/", ".", "~")) else "volume"
        res.append((src, tgt, kind))
    return res


SIZE = re.compile(r"^\d+(\.\d+)?\s*([bkmg]b?|[kmg]i?b?)?$", re.I)


def find_line(text, needle, default=0):
    for n, line in enumerate(text.split("\n"), 1):
        if needle in line:
            return n
    return default


def lint_compose(path, text, f):
    try:
        import yaml
    except ImportError:
        f.warn(path, 0, "DC200", "python3 yaml module missing (apt-get install python3-yaml): compose checks skipped")
        return
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        f.error(path, (mark.line + 1) if mark else 0, "DC200", f"not valid YAML: {e}")
        return
    if not isinstance(doc, dict) or not isinstance(doc.get("services"), dict) or not doc["services"]:
        f.error(path, 0, "DC200", "no services: mapping")
        return
    for k in doc:
        if k == "version":
            f.warn(path, find_line(text, "version:"), "DC201", "`version` is obsolete in the Compose Specification")
        elif not (k in TOP_KEYS or str(k).startswith("x-")):
            f.error(path, find_line(text, f"{k}:"), "DC201", f"unknown top-level key '{k}'")
    unset = set()
    check_env = dict(os.environ)
    doc = interpolate(doc, check_env, unset)
    declared = set((doc.get("volumes") or {}).keys())
    host_ports = {}
    host_net_ports = {}
    hostnames = {}
    for name, svc in doc["services"].items():
        line = find_line(text, f"  {name}:")
        if not isinstance(svc, dict):
            f.error(path, line, "DC202", f"service {name} is not a mapping")
            continue
        for k in svc:
            if k not in SERVICE_KEYS and not str(k).startswith("x-"):
                f.error(path, line, "DC202", f"service {name}: unknown key '{k}'")
        if not svc.get("image") and not svc.get("build"):
            f.error(path, line, "DC213", f"service {name}: neither image nor build")
        img = svc.get("image")
        if isinstance(img, str):
            _, tag, digest = split_image(img)
            if tag == "latest" or (tag is None and not digest):
                f.warn(path, line, "DC213", f"service {name}: image '{img}' is (implicitly) 'latest': tag the image you build")
        env = env_of(svc, path, f, line)
        ssh_port = env.get("SSH_PORT", "2222")
        host_net = svc.get("network_mode") == "host"
        ports = svc.get("ports") or []
        if host_net:
            if ports:
                f.error(path, line, "DC203", f"service {name}: ports: are ignored with network_mode: host (sshd listens on SSH_PORT of the machine)")
            if "SSH_PORT" not in env:
                f.error(path, line, "DC203", f"service {name}: host networking needs SSH_PORT set (22 is the machine's own sshd)")
            elif ssh_port == "22":
                f.error(path, line, "DC203", f"service {name}: SSH_PORT 22 clashes with the machine's sshd in host networking")
            if ssh_port in host_net_ports:
                f.error(path, line, "DC203", f"service {name}: SSH_PORT {ssh_port} also used by {host_net_ports[ssh_port]} on the same machine")
            host_net_ports[ssh_port] = name
        else:
            published_ssh = False
            for p in ports:
                parsed = parse_port(p)
                if parsed is None:
                    f.error(path, line, "DC204", f"service {name}: ports entry {p!r} is not HOST:CONTAINER[/proto]")
                    continue
                hp, cp, proto = parsed
                if hp is not None:
                    if not 1 <= hp <= 65535:
                        f.error(path, line, "DC204", f"service {name}: host port {hp} out of range")
                    if (hp, proto) in host_ports:
                        f.error(path, line, "DC204", f"service {name}: host port {hp} also published by {host_ports[(hp, proto)]}")
                    host_ports[(hp, proto)] = name
                if str(cp) == ssh_port and proto == "tcp":
                    published_ssh = True
                    if hp is None:
                        f.warn(path, line, "DC204", f"service {name}: SSH port {cp} published on a random host port: the hostfile needs a fixed one")
            # Other modes (none, container:, service:) are not ferry workers reached by port.
            if svc.get("network_mode") in (None, "bridge") and not published_ssh:
                f.error(path, line, "DC204", f"service {name}: bridge networking but container port {ssh_port} (SSH_PORT) is not published: ferryrun cannot reach it")
        mounts = volume_mounts(svc)
        if not any(t == HOST_KEY_DIR for _, t, _ in mounts):
            f.warn(path, line, "DC205", f"service {name}: no volume at {HOST_KEY_DIR}: a re-created container gets a new host key and known_hosts refuses it")
        if not any(t == AUTH_KEYS for _, t, _ in mounts) and "SSH_AUTHORIZED_KEYS" not in env:
            f.error(path, line, "DC206", f"service {name}: no key to log in with: mount one at {AUTH_KEYS} or set SSH_AUTHORIZED_KEYS")
        for src, tgt, kind in mounts:
            if kind == "volume" and src and src not in declared:
                f.error(path, line, "DC207", f"service {name}: volume '{src}' is not declared under top-level volumes:")
        ipc, shm = svc.get("ipc"), svc.get("shm_size")
        if ipc == "host" and shm is not None:
            f.warn(path, line, "DC208", f"service {name}: shm_size is ignored with ipc: host")
        elif ipc != "host" and shm is None:
            f.warn(path, line, "DC208", f"service {name}: /dev/shm stays at Docker's 64 MB: set shm_size or ipc: host")
        if shm is not None and not (isinstance(shm, int) or SIZE.match(str(shm))):
            f.error(path, line, "DC208", f"service {name}: shm_size '{shm}' is not a size (16gb)")
        for d in svc.get("devices", []) or []:
            ds = d if isinstance(d, str) else (d or {}).get("source", "")
            if not str(ds).startswith("/dev/"):
                f.error(path, line, "DC209", f"service {name}: device '{d}' is not /dev/...[:/dev/...[:rwm]]")
        res = (((svc.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get("devices") or []
        for d in res:
            if not isinstance(d, dict) or not d.get("capabilities"):
                f.error(path, line, "DC209", f"service {name}: a reserved device needs capabilities (e.g. [gpu])")
                continue
            if "count" in d and "device_ids" in d:
                f.error(path, line, "DC209", f"service {name}: count and device_ids exclude each other")
            ids = d.get("device_ids")
            if ids is not None and not (isinstance(ids, list) and all(isinstance(x, str) for x in ids)):
                f.error(path, line, "DC209", f"service {name}: device_ids must be a list of strings (\"0\", not 0)")
        if svc.get("init") is not True:
            f.warn(path, line, "DC210", f"service {name}: init: true makes PID 1 reap orphaned processes")
        hn = svc.get("hostname")
        if hn:
            if hn in hostnames:
                f.warn(path, line, "DC211", f"service {name}: hostname '{hn}' also used by {hostnames[hn]}")
            hostnames[hn] = name
