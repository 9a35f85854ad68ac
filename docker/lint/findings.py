"""Rule catalogue and findings of docker/check."""

import sys

RULES = {
    "DF100": "Dockerfile parses: known instructions, FROM first (after ARG)",
    "DF101": "base image pinned to a version (tag with a version number, or a digest)",
    "DF102": "no `latest` image tag",
    "DF103": "apt-get install uses -y and --no-install-recommends",
    "DF104": "apt-get install in the same RUN as apt-get update and rm -rf /var/lib/apt/lists/*",
    "DF105": "no apt-get upgrade / dist-upgrade in an image",
    "DF106": "apt-get, not apt, in scripts",
    "DF107": "USER: final stage does not end as an explicit root; no apt-get after a non-root USER",
    "DF108": "EXPOSE: valid ports; the final stage exposes its default SSH_PORT",
    "DF109": "HEALTHCHECK: one per stage, CMD or NONE, valid durations; final stage has one",
    "DF110": "WORKDIR instead of `cd` in RUN",
    "DF111": "COPY instead of ADD for local files",
    "DF112": "COPY --from names an earlier stage or a pinned image",
    "DF113": "ENTRYPOINT and CMD in exec (JSON) form",
    "DF114": "no sudo in RUN",
    "DF115": "no SSH host keys baked into the image (every container would share them)",
    "DF116": "WORKDIR is absolute",
    "DF117": "no MAINTAINER (use LABEL)",
    "DF118": "pip install --no-cache-dir",
    "DC200": "compose file parses as YAML and has services",
    "DC201": "known top-level keys; no obsolete `version`",
    "DC202": "known service keys",
    "DC203": "host networking: no ports:, SSH_PORT set, not 22, unique per file",
    "DC204": "bridge networking: SSH_PORT published, valid and unique host ports",
    "DC205": "SSH host keys in a volume at /etc/ssh/host_keys",
    "DC206": "authorized keys mounted at /etc/ferry/authorized_keys or SSH_AUTHORIZED_KEYS set",
    "DC207": "named volumes declared at top level",
    "DC208": "/dev/shm: ipc: host or shm_size (Docker's default is 64 MB), not both",
    "DC209": "devices and GPU reservations well-formed",
    "DC210": "init: true (PID 1 reaps orphans)",
    "DC211": "hostnames unique across services",
    "DC212": "environment is a mapping or a list of NAME=value",
    "DC213": "an image or a build; no `latest` tag",
    "SH300": "entrypoint: bash -n and shellcheck (when installed)",
    "SD400": "sshd_config accepted by sshd -t (when installed); key-only login",
    "CC500": "docker compose config / docker-compose config accepts the file (when installed)",
}


class Findings:
    def __init__(self):
        self.items = []

    def add(self, path, line, rule, severity, msg):
        self.items.append((path, line, rule, severity, msg))

    def error(self, path, line, rule, msg):
        self.add(path, line, rule, "error", msg)

    def warn(self, path, line, rule, msg):
        self.add(path, line, rule, "warning", msg)

    def rules(self):
        return {i[2] for i in self.items}

    def count(self, severity):
        return sum(1 for i in self.items if i[3] == severity)

    def print(self, out=sys.stdout):
        for path, line, rule, sev, msg in self.items:
            where = f"{path}:{line}" if line else path
            print(f"{where}: {rule} {sev}: {msg}", file=out)
