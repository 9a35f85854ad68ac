"""docker/check's Dockerfile rules (DF1xx): a small, hadolint-like linter."""

import json
import re

INSTRUCTIONS = {
    "FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY",
    "ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL",
    "HEALTHCHECK", "SHELL",
}


class Instruction:
    def __init__(self, line, keyword, args, ignores):
        self.line = line
        self.keyword = keyword
        self.args = args
        self.ignores = ignores


def parse_dockerfile(text):
    """Returns the instructions; continuation lines joined, comments dropped."""
    escape = "\\"
    lines = text.split("\n")
    # Parser directives: only at the very top.
    for raw in lines:
        m = re.match(r"^#\s*(\w+)\s*=\s*(\S+)\s*$", raw)
        if not m:
            break
        if m.group(1).lower() == "escape":
            escape = m.group(2)
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
        keyword, args = m.group(1).upper(), m.group(2)
        out.append(Instruction(start, keyword, args, pending_ignores))
        pending_ignores = set()
    return out


def substitute(text, variables):
    """Dockerfile variable substitution ($V, ${V}, ${V:-d}, ${V:+x}); None if unresolved."""
    unresolved = []

    def repl(m):
        name = m.group(1) or m.group(4)
        op, word = m.group(2), m.group(3)
        val = variables.get(name)
        if op == ":-":
            return val if val else word
        if op == ":+":
            return word if val else ""
        if val is None:
            unresolved.append(name)
            return ""
        return val

    res = re.sub(r"\$(?:\{(\w+)(?:(:-|:\+)([^}]*))?\}|(\w+))", repl, text)
    return None if unresolved else res


def split_image(ref):
    """'repo[:tag][@digest]' → (repo, tag, digest)."""
    digest = None
    if "@" in ref:
        ref, digest = ref.split("@", 1)
    tag = None
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        ref, tag = ref.rsplit(":", 1)
    return ref, tag, digest


def check_image_ref(f, path, ins, ref, stage_names, what):
    if ref in stage_names or ref == "scratch":
        return
    repo, tag, digest = split_image(ref)
    if tag == "latest":
        f.error(path, ins.line, "DF102", f"{what} '{ref}' uses the moving tag 'latest'")
        return
    if digest:
        return
    if tag is None:
        f.error(path, ins.line, "DF101", f"{what} '{ref}' has no tag: pin a version (e.g. debian:12.11-slim) or a digest")
    elif not re.search(r"\d", tag):
        f.warn(path, ins.line, "DF101", f"{what} '{ref}': tag '{tag}' names no version; it moves (pin e.g. debian:12.11-slim)")


DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$")


def shell_segments(cmd):
    """A RUN command split at &&, ||, ;, | (rough, quote-unaware is enough here)."""
    return [s.strip() for s in re.split(r"&&|\|\||;|\|", cmd) if s.strip()]


def lint_dockerfile(path, text, f):
    ins_list = parse_dockerfile(text)
    if not ins_list:
        f.error(path, 0, "DF100", "empty Dockerfile")
        return

    def emit(ins, rule, sev, msg):
        if rule in ins.ignores:
            return
        f.add(path, ins.line, rule, sev, msg)

    global_args = {}
    stages = []  # dicts: name, instructions
    for ins in ins_list:
        if ins.keyword not in INSTRUCTIONS:
            emit(ins, "DF100", "error", f"unknown instruction '{ins.keyword}'")
            continue
        if ins.keyword == "FROM":
            stages.append({"from": ins, "ins": [], "name": None})
            continue
        if not stages:
            if ins.keyword == "ARG":
                m = re.match(r"^(\w+)(?:=(.*))?$", ins.args.strip())
                if m:
                    global_args[m.group(1)] = (m.group(2) or "").strip().strip('"')
            else:
                emit(ins, "DF100", "error", f"{ins.keyword} before the first FROM")
            continue
        stages[-1]["ins"].append(ins)
    if not stages:
        f.error(path, 0, "DF100", "no FROM instruction")
        return

    stage_names = set()
    for idx, st in enumerate(stages):
        ins = st["from"]
        words = [w for w in ins.args.split() if not w.startswith("--")]
        if not words:
            emit(ins, "DF100", "error", "FROM without an image")
            continue
        ref = substitute(words[0], global_args)
        if ref is None:
            emit(ins, "DF101", "warning", f"cannot resolve '{words[0]}' (ARG without default)")
        else:
            if ref.lower() not in stage_names:
                check_image_ref(f, path, ins, ref, stage_names, "base image")
        if len(words) >= 3 and words[1].lower() == "as":
            st["name"] = words[2].lower()
        final = idx == len(stages) - 1
        lint_stage(path, st, final, stage_names, idx, emit)
        if st["name"]:
            stage_names.add(st["name"])


def lint_stage(path, st, final, stage_names, index, emit):
    user = None
    last_user_ins = None
    healthchecks = []
    exposes = []
    env = {}
    installs_sshd = False
    removes_host_keys = False
    for ins in st["ins"]:
        kw, args = ins.keyword, ins.args
        if kw == "RUN":
            cmd = args
            if re.match(r"^\[", cmd.strip()):
                try:
                    cmd = " ".join(json.loads(cmd))
                except ValueError:
                    emit(ins, "DF100", "error", "RUN in exec form is not valid JSON")
            segs = shell_segments(cmd)
            has_update = any(re.search(r"\bapt-get\b.*\bupdate\b", s) for s in segs)
            has_clean = re.search(r"rm\s+-[a-zA-Z]*r[a-zA-Z]*f?[a-zA-Z]*\s+(\S+\s+)*/var/lib/apt/lists", cmd) is not None
            for s in segs:
                if re.search(r"\bapt-get\b.*\binstall\b", s):
                    if "--no-install-recommends" not in s:
                        emit(ins, "DF103", "error", "apt-get install without --no-install-recommends (pulls in recommended packages)")
                    if not re.search(r"(\s-[a-zA-Z]*y|--yes|--assume-yes|-qq)\b", s):
                        emit(ins, "DF103", "error", "apt-get install without -y (the build cannot answer)")
                    if not has_update:
                        emit(ins, "DF104", "error", "apt-get install without apt-get update in the same RUN (a cached, stale package list)")
                    if not has_clean:
                        emit(ins, "DF104", "error", "apt-get install without rm -rf /var/lib/apt/lists/* in the same RUN (lists stay in the layer)")
                    if re.search(r"\bopenssh-server\b", s):
                        installs_sshd = True
                    if user not in (None, "root", "0"):
                        emit(ins, "DF107", "error", f"apt-get after USER {user}: it needs root")
                if re.search(r"\bapt-get\b.*\b(dist-upgrade|upgrade)\b", s):
                    emit(ins, "DF105", "warning", "apt-get upgrade in an image: update the base image instead")
                if re.match(r"^(sudo\s+)?apt\s", s):
                    emit(ins, "DF106", "warning", "use apt-get (apt's CLI is not stable for scripts)")
                if re.match(r"^cd\s", s):
                    emit(ins, "DF110", "warning", "use WORKDIR rather than cd")
                if re.match(r"^sudo\s", s):
                    emit(ins, "DF114", "warning", "sudo in RUN: the build already runs as the USER given")
                if re.search(r"\bssh-keygen\b.*\s-A\b", s) or re.search(r"\bssh-keygen\b.*-f\s*/etc/ssh/ssh_host_", s):
                    emit(ins, "DF115", "error", "SSH host keys generated in the image: every container would share them; generate at start into a volume")
                if re.search(r"\bpip3?\s+install\b", s) and "--no-cache-dir" not in s:
                    emit(ins, "DF118", "warning", "pip install without --no-cache-dir")
            if re.search(r"rm\s+(-\w+\s+)*\S*/etc/ssh/ssh_host_", cmd):
                removes_host_keys = True
        elif kw == "USER":
            user = args.split(":")[0].strip()
            last_user_ins = ins
        elif kw == "EXPOSE":
            for p in args.split():
                m = re.match(r"^(\d+)(-(\d+))?(/(tcp|udp|sctp))?$", p)
                ok = m and 1 <= int(m.group(1)) <= 65535 and (not m.group(3) or int(m.group(1)) <= int(m.group(3)) <= 65535)
                if not ok and not p.startswith("$"):
                    emit(ins, "DF108", "error", f"EXPOSE '{p}' is not a port (1-65535[/tcp|udp])")
                elif m:
                    exposes.append(int(m.group(1)))
        elif kw == "ENV":
            for m in re.finditer(r"(\w+)=(\"[^\"]*\"|\S+)", args):
                env[m.group(1)] = m.group(2).strip('"')
            m = re.match(r"^(\w+)\s+([^=].*)$", args)
            if m and "=" not in m.group(1):
                env[m.group(1)] = m.group(2).strip()
        elif kw == "HEALTHCHECK":
            healthchecks.append(ins)
            rest = args
            while True:
                m = re.match(r"^--(\w[\w-]*)=(\S+)\s*(.*)$", rest)
                if not m:
                    break
                opt, val, rest = m.group(1), m.group(2), m.group(3)
                if opt in ("interval", "timeout", "start-period", "start-interval"):
                    if not DURATION.match(val):
                        emit(ins, "DF109", "error", f"HEALTHCHECK --{opt}={val} is not a duration (30s, 1m30s)")
                elif opt == "retries":
                    if not val.isdigit():
                        emit(ins, "DF109", "error", f"HEALTHCHECK --retries={val} is not a number")
                else:
                    emit(ins, "DF109", "error", f"HEALTHCHECK has no option --{opt}")
            word = rest.split(None, 1)[0].upper() if rest.strip() else ""
            if word not in ("CMD", "NONE"):
                emit(ins, "DF109", "error", "HEALTHCHECK needs CMD <command> or NONE")
        elif kw in ("ENTRYPOINT", "CMD"):
            if not args.strip().startswith("["):
                emit(ins, "DF113", "warning", f"{kw} in shell form: signals go to /bin/sh, not the program; use [\"prog\", \"arg\"]")
            else:
                try:
                    json.loads(args)
                except ValueError:
                    emit(ins, "DF113", "error", f"{kw} looks like exec form but is not valid JSON (Docker would run it with /bin/sh)")
        elif kw == "ADD":
            srcs = [w for w in args.split() if not w.startswith("--")][:-1]
            for s in srcs:
                if not re.match(r"^(https?://|git@)", s) and not re.search(r"\.(tar|tgz|tar\.\w+|txz|tbz2?)$", s):
                    emit(ins, "DF111", "warning", f"ADD {s}: use COPY for local files (ADD also unpacks and downloads)")
        elif kw == "COPY":
            m = re.search(r"--from=(\S+)", args)
            if m:
                src = m.group(1).lower()
                if not (src in stage_names or (src.isdigit() and int(src) < index)):
                    if ":" in src or "/" in src or "@" in src:
                        ref = src
                        _, tag, digest = split_image(ref)
                        if tag == "latest":
                            emit(ins, "DF102", "error", f"COPY --from={src}: moving tag 'latest'")
                        elif not digest and (tag is None or not re.search(r"\d", tag)):
                            emit(ins, "DF112", "error", f"COPY --from={src}: pin the image's version")
                    else:
                        emit(ins, "DF112", "error", f"COPY --from={src}: no earlier stage of that name")
        elif kw == "WORKDIR":
            w = args.strip().strip('"')
            if not (w.startswith("/") or w.startswith("$")):
                emit(ins, "DF116", "warning", f"WORKDIR {w} is relative: it depends on the previous WORKDIR")
        elif kw == "MAINTAINER":
            emit(ins, "DF117", "warning", "MAINTAINER is deprecated: LABEL org.opencontainers.image.authors=...")

    frm = st["from"]
    if len(healthchecks) > 1:
        for h in healthchecks[:-1]:
            emit(h, "DF109", "warning", "several HEALTHCHECKs in one stage: only the last counts")
    if installs_sshd and not removes_host_keys:
        emit(frm, "DF115", "warning", "openssh-server is installed, and Debian's package generates host keys at install: delete /etc/ssh/ssh_host_* after installing it")
    if not final:
        return
    if last_user_ins is not None and user in ("root", "0"):
        emit(last_user_ins, "DF107", "warning", "the image ends as USER root explicitly (say why with # check: ignore=DF107)")
    if not healthchecks:
        emit(frm, "DF109", "warning", "the final stage has no HEALTHCHECK")
    ssh_port = env.get("SSH_PORT")
    if ssh_port and ssh_port.isdigit() and int(ssh_port) not in exposes:
        emit(frm, "DF108", "warning", f"ENV SSH_PORT={ssh_port} but the final stage does not EXPOSE it")
    if not exposes:
        emit(frm, "DF108", "warning", "the final stage EXPOSEs no port (document the SSH port)")
