"""docker/check's compose rules (DC2xx): what a ferry worker service needs.

The Compose schema (keys, types, declared volumes, device syntax) is left to
`docker compose config` / `docker-compose config` (CC500); this file reads only what
the rules need.
"""

import copy
import re

HOST_KEY_DIR = "/etc/ssh/host_keys"
AUTH_KEYS = "/etc/ferry/authorized_keys"
DEFAULT_SSH_PORT = "2222"  # entrypoint.sh's default when SSH_PORT is not set


def load_compose(path, text, f):
    """The parsed file (YAML anchors and `<<:` merges resolved, variables interpolated
    with their defaults), or None after reporting why the rules cannot read it."""
    try:
        import yaml
    except ImportError:
        f.warn(path, 0, None, "python3 yaml module missing (apt-get install python3-yaml): "
               "compose rules DC2xx not run")
        return None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        msg = " ".join(str(e).split())
        f.error(path, (mark.line + 1) if mark else 0, None, f"not valid YAML, compose rules not run: {msg}")
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("services"), dict) or not doc["services"]:
        f.error(path, 0, None, "no `services:` mapping: not a compose file the rules can read")
        return None
    return interpolate(doc)


def is_override(doc):
    """An override file (`-f base -f override`) adds to services a base file defines:
    some service of it has neither image nor build."""
    return any(isinstance(s, dict) and not s.get("image") and not s.get("build")
               for s in doc["services"].values())


def interpolate(value):
    """Compose interpolation with the files' own defaults, not this shell's environment:
    ${V:-d} and ${V-d} → d; ${V:?e} → a placeholder path; ${V:+x} → ""; $$ → $;
    ${V} and $V without a default stay as written (the rules skip what they cannot read)."""
    if isinstance(value, dict):
        return {interpolate(k): interpolate(v) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v) for v in value]
    if not isinstance(value, str):
        return value
    pat = re.compile(r"\$\{(\w+)(?:(:?[-?+])((?:[^{}]|\{[^{}]*\})*))?\}|\$(\w+)")

    def repl(m):
        name, op, word = m.group(1) or m.group(4), m.group(2), m.group(3) or ""
        if op in (":-", "-"):
            return interpolate(word)
        if op in (":?", "?"):
            return f"/placeholder/{name}"
        if op in (":+", "+"):
            return ""
        return m.group(0)

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


# ------------------------------------------------------------------ merging

def env_dict(env):
    """environment: as a mapping (list entries NAME=value; NAME alone → "")."""
    if isinstance(env, dict):
        return {str(k): ("" if v is None else str(v)) for k, v in env.items()}
    if isinstance(env, list):
        return dict((str(e).partition("=")[0], str(e).partition("=")[2]) for e in env)
    return {}


def mount_target(v):
    if isinstance(v, dict):
        return v.get("target")
    parts = str(v).split(":")
    return parts[1] if len(parts) > 1 else parts[0]


def merge_service(base, over):
    """Compose's merge of one service (`-f base -f override`): mappings merged key by key,
    environment as a mapping, volumes and devices by their container path, other lists
    appended (without repeating an entry), anything else replaced."""
    res = copy.deepcopy(base)
    for k, v in over.items():
        old = res.get(k)
        if k == "environment":
            res[k] = {**env_dict(old), **env_dict(v)}
        elif k in ("volumes", "devices") and isinstance(old, list) and isinstance(v, list):
            new = {mount_target(x) for x in v}
            res[k] = [x for x in old if mount_target(x) not in new] + copy.deepcopy(v)
        elif isinstance(old, dict) and isinstance(v, dict):
            res[k] = merge_service(old, v)
        elif isinstance(old, list) and isinstance(v, list):
            res[k] = old + [x for x in v if x not in old]
        else:
            res[k] = copy.deepcopy(v)
    return res


def merge_compose(base, over):
    res = copy.deepcopy(base)
    for k, v in over.items():
        if k == "services":
            for name, svc in v.items():
                old = res["services"].get(name)
                if isinstance(old, dict) and isinstance(svc, dict):
                    res["services"][name] = merge_service(old, svc)
                else:
                    res["services"][name] = copy.deepcopy(svc)
        elif isinstance(res.get(k), dict) and isinstance(v, dict):
            res[k] = {**res[k], **v}
        else:
            res[k] = copy.deepcopy(v)
    return res


# ------------------------------------------------------------------ rules

def parse_port(spec):
    """A ports entry → (host, container, proto): host None when not given; host and
    container an int, or a str when unreadable here (ranges, unset variables).
    None when it is no port at all (docker-compose config reports it)."""
    if isinstance(spec, int):
        return (None, spec, "tcp")
    if isinstance(spec, dict):
        hp, cp = spec.get("published"), spec.get("target")
        if cp is None:
            return None
        as_int = lambda x: int(x) if str(x).isdigit() else str(x)  # noqa: E731
        return (None if hp in (None, "") else as_int(hp), as_int(cp), spec.get("protocol", "tcp"))
    s = str(spec)
    proto = "tcp"
    if "/" in s:
        s, proto = s.rsplit("/", 1)
    parts = s.rsplit(":", 2)
    if len(parts) == 3:
        parts = parts[1:]  # ip:host:container
    if len(parts) == 1:
        parts = [""] + parts
    hp, cp = parts
    return (None if hp == "" else (int(hp) if hp.isdigit() else hp),
            int(cp) if cp.isdigit() else cp, proto)


def find_line(text, needle, default=0):
    for n, line in enumerate(text.split("\n"), 1):
        if needle in line:
            return n
    return default


def lint_services(path, doc, text, f):
    """The DC2xx rules on a loaded compose file (or a base merged with an override;
    text gives the line numbers)."""
    host_ports = {}
    host_net_ports = {}
    hostnames = {}
    for name, svc in doc["services"].items():
        line = find_line(text, f"  {name}:")
        if not isinstance(svc, dict):
            continue  # docker-compose config reports it
        env = env_dict(svc.get("environment"))
        ssh_port = env.get("SSH_PORT", DEFAULT_SSH_PORT)
        mode = svc.get("network_mode")
        ports = svc.get("ports") if isinstance(svc.get("ports"), list) else []
        if mode == "host":
            if ports:
                f.error(path, line, "DC203", f"service {name}: ports: are ignored with network_mode: host "
                        "(sshd listens on SSH_PORT of the machine)")
            if "SSH_PORT" not in env:
                f.error(path, line, "DC203", f"service {name}: host networking needs SSH_PORT set "
                        "(22 is the machine's own sshd)")
            elif ssh_port == "22":
                f.error(path, line, "DC203", f"service {name}: SSH_PORT 22 clashes with the machine's "
                        "sshd in host networking")
            if ssh_port in host_net_ports:
                f.error(path, line, "DC203", f"service {name}: SSH_PORT {ssh_port} also used by "
                        f"{host_net_ports[ssh_port]} on the same machine")
            host_net_ports[ssh_port] = name
        else:
            published_ssh = not ssh_port.isdigit()  # unreadable here: not judged
            for p in ports:
                parsed = parse_port(p)
                if parsed is None:
                    continue
                hp, cp, proto = parsed
                if isinstance(hp, int):
                    if (hp, proto) in host_ports:
                        f.error(path, line, "DC204", f"service {name}: host port {hp} also published "
                                f"by {host_ports[(hp, proto)]}")
                    host_ports[(hp, proto)] = name
                if proto != "tcp":
                    continue
                if isinstance(cp, str):
                    published_ssh = True  # a range or a variable: not judged
                elif str(cp) == ssh_port:
                    published_ssh = True
                    if hp is None:
                        f.warn(path, line, "DC204", f"service {name}: SSH port {cp} published on a "
                               "random host port: the hostfile needs a fixed one")
            # Other modes (none, container:, service:) are not ferry workers reached by port.
            if mode in (None, "bridge") and not published_ssh:
                f.error(path, line, "DC204", f"service {name}: bridge networking but container port "
                        f"{ssh_port} (SSH_PORT) is not published: ferryrun cannot reach it")
        volumes = svc.get("volumes") if isinstance(svc.get("volumes"), list) else []
        targets = {mount_target(v) for v in volumes}
        if HOST_KEY_DIR not in targets:
            f.warn(path, line, "DC205", f"service {name}: no volume at {HOST_KEY_DIR}: a re-created "
                   "container gets a new host key and known_hosts refuses it")
        if AUTH_KEYS not in targets and "SSH_AUTHORIZED_KEYS" not in env:
            f.error(path, line, "DC206", f"service {name}: no key to log in with: mount one at "
                    f"{AUTH_KEYS} or set SSH_AUTHORIZED_KEYS")
        ipc, shm = svc.get("ipc"), svc.get("shm_size")
        if ipc == "host" and shm is not None:
            f.warn(path, line, "DC208", f"service {name}: shm_size is ignored with ipc: host")
        elif ipc != "host" and shm is None:
            f.warn(path, line, "DC208", f"service {name}: /dev/shm stays at Docker's 64 MB "
                   "(NCCL and DataLoader workers die with a bus error): set shm_size or ipc: host")
        if svc.get("init") is not True:
            f.warn(path, line, "DC210", f"service {name}: init: true makes PID 1 reap orphaned processes")
        hn = svc.get("hostname")
        if hn:
            if hn in hostnames:
                f.warn(path, line, "DC211", f"service {name}: hostname '{hn}' also used by {hostnames[hn]}")
            hostnames[hn] = name


def lint_compose(path, text, f):
    """A whole compose file on its own: parse, then the DC2xx rules."""
    doc = load_compose(path, text, f)
    if doc is not None:
        lint_services(path, doc, text, f)


def lint_override(path, doc, text, base_name, base_doc, f):
    """An override file merged onto a base file: the DC2xx findings the merge adds to the
    base's own (those are reported for the base file)."""
    alone, merged = type(f)(), type(f)()
    lint_services(path, base_doc, text, alone)
    lint_services(path, merge_compose(base_doc, doc), text, merged)
    seen = {(i[2], i[3], i[4]) for i in alone.items}
    for p, line, rule, sev, msg in merged.items:
        if (rule, sev, msg) not in seen:
            f.add(p, line, rule, sev, f"with {base_name}: {msg}")
