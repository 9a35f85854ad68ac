"""docker/check's Dockerfile rules (DF1xx): what a ferry worker image needs.

Syntax and generic hygiene are left to `docker build` (both builders parse the file)
and to generic linters; these rules only read what they need.
"""

import re

DIRECTIVE = re.compile(r"^#\s*([A-Za-z][A-Za-z0-9_-]*)\s*=\s*(.*?)\s*$")

# Flags the classic builder (DOCKER_BUILDKIT=0; Docker 20.10's builder) refuses.
BUILDKIT_ONLY_FLAGS = {
    "COPY": ("chmod", "link", "parents", "exclude"),
    "ADD": ("chmod", "link", "parents", "exclude", "checksum", "keep-git-dir"),
    "RUN": ("mount", "network", "security"),
}
DEFAULT_SSH_PORT = "2222"  # entrypoint.sh's default when SSH_PORT is not set


class Instruction:
    def __init__(self, line, keyword, args, ignores):
        self.line = line
        self.keyword = keyword
        self.args = args
        self.ignores = ignores


def parse_dockerfile(text):
    """→ (directives {name: (value, line)}, instructions); continuation lines joined,
    comments dropped. Lenient: `docker build` reports syntax errors."""
    lines = text.split("\n")
    directives = {}
    # Parser directives: only at the very top, before any comment, blank line or instruction.
    for n, raw in enumerate(lines, 1):
        m = DIRECTIVE.match(raw.strip())
        if not m or m.group(1).lower() in directives:
            break
        directives[m.group(1).lower()] = (m.group(2), n)
    escape = directives.get("escape", ("\\", 0))[0] or "\\"
    out = []
    pending_ignores = set()
    i = 0
    while i < len(lines):
        raw = lines[i]
        stripped = raw.strip()
        if not stripped:
            i += 1
            continue
        if stripped.startswith("#"):
            m = re.match(r"#\s*check:\s*ignore=([\w,\s]+)", stripped)
            if m:
                pending_ignores |= {x.strip() for x in m.group(1).split(",") if x.strip()}
            i += 1
            continue
        start = i + 1
        parts = []
        cur = raw
        while True:
            body = cur.rstrip()
            if body.endswith(escape):
                parts.append(body[: -len(escape)])
                i += 1
                # Comment lines and empty lines inside a continuation are skipped.
                while i < len(lines) and (lines[i].strip().startswith("#") or not lines[i].strip()):
                    i += 1
                if i >= len(lines):
                    break
                cur = lines[i]
                continue
            parts.append(body)
            i += 1
            break
        joined = " ".join(p.strip() for p in parts).strip()
        m = re.match(r"^(\S+)\s*(.*)$", joined)
        out.append(Instruction(start, m.group(1).upper(), m.group(2), pending_ignores))
        pending_ignores = set()
    return directives, out


def leading_flags(args):
    """`--name[=value]` words before the first other word → [name, ...]."""
    names = []
    for w in args.split():
        if not w.startswith("--"):
            break
        names.append(w[2:].split("=", 1)[0].lower())
    return names


def lint_dockerfile(path, text, f):
    directives, ins_list = parse_dockerfile(text)

    def emit(ins, rule, sev, msg):
        if rule in ins.ignores:
            return
        f.add(path, ins.line, rule, sev, msg)

    if "syntax" in directives:
        value, line = directives["syntax"]
        f.error(path, line, "DF120", f"`# syntax={value}` makes BuildKit pull that frontend image "
                "before building: an offline site cannot build (the classic builder ignores it)")

    stages = []  # each: the FROM instruction and the stage's instructions
    for ins in ins_list:
        if ins.keyword == "FROM":
            stages.append({"from": ins, "ins": []})
        elif stages:
            stages[-1]["ins"].append(ins)
        flags = BUILDKIT_ONLY_FLAGS.get(ins.keyword, ())
        for flag in leading_flags(ins.args):
            if flag in flags:
                emit(ins, "DF120", "error", f"{ins.keyword} --{flag} needs BuildKit: the classic "
                     "builder refuses it" + (" (set the mode with RUN chmod)" if flag == "chmod" else ""))
    for idx, st in enumerate(stages):
        lint_stage(st, idx == len(stages) - 1, emit)


def lint_stage(st, final, emit):
    healthcheck = None
    exposes = set()
    env = {}
    installs_sshd = False
    removes_host_keys = False
    for ins in st["ins"]:
        kw, args = ins.keyword, ins.args
        if kw == "RUN":
            if re.search(r"\bssh-keygen\b[^;&|]*\s-A\b", args) or \
                    re.search(r"\bssh-keygen\b[^;&|]*-f\s*\S*/etc/ssh/ssh_host_", args):
                emit(ins, "DF115", "error", "SSH host keys generated in the image: every container "
                     "would share them; the entrypoint makes them at start, in a volume")
            # apt-get install, docker/install-missing, apk add ...: Debian's package
            # generates host keys when it is installed.
            if re.search(r"(^|[\s'\"])openssh-server\b", args):
                installs_sshd = True
            if re.search(r"rm\s+(-\w+\s+)*\S*/etc/ssh/ssh_host_", args):
                removes_host_keys = True
        elif kw == "EXPOSE":
            for p in args.split():
                p = re.sub(r"\$\{?SSH_PORT\}?", env.get("SSH_PORT", "$SSH_PORT"), p)
                m = re.match(r"^(\d+)(?:-(\d+))?(/\w+)?$", p)
                if m and (m.group(3) or "/tcp").lower() == "/tcp":
                    lo = int(m.group(1))
                    exposes.update(range(lo, int(m.group(2) or lo) + 1))
        elif kw == "ENV":
            for m in re.finditer(r"(\w+)=(\"[^\"]*\"|'[^']*'|\S+)", args):
                env[m.group(1)] = m.group(2).strip("\"'")
            m = re.match(r"^(\w+)\s+([^=\s].*)$", args)
            if m:
                env[m.group(1)] = m.group(2).strip().strip("\"'")
        elif kw == "HEALTHCHECK":
            healthcheck = ins

    frm = st["from"]
    if installs_sshd and not removes_host_keys:
        emit(frm, "DF115", "warning", "openssh-server is installed, and Debian's package generates "
             "host keys at install: delete /etc/ssh/ssh_host_* after installing it")
    if not final:
        return
    if healthcheck is None:
        emit(frm, "DF109", "warning", "the final stage has no HEALTHCHECK: `docker ps` and compose "
             "cannot tell a worker whose sshd does not answer (entrypoint --health)")
    elif re.match(r"^(--\S+\s+)*NONE\s*$", healthcheck.args, re.I):
        emit(healthcheck, "DF109", "warning", "HEALTHCHECK NONE in the final stage: nothing tells "
             "a worker whose sshd does not answer (entrypoint --health)")
    port = env.get("SSH_PORT", DEFAULT_SSH_PORT)
    if not exposes:
        emit(frm, "DF108", "warning", f"the final stage EXPOSEs no port: EXPOSE {port} (SSH_PORT), "
             "the port ferryrun connects to")
    elif port.isdigit() and int(port) not in exposes:
        emit(frm, "DF108", "warning", f"the default SSH_PORT is {port}, but the final stage does not "
             f"EXPOSE {port}/tcp")
