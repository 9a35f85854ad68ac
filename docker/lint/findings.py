"""Rule catalogue and findings of docker/check."""

import sys

# Only what encodes a ferry worker's needs: what `docker build`, `docker-compose config`
# or a generic Dockerfile linter already checks is left to them.
RULES = {
    "DF108": "the final stage EXPOSEs its default SSH_PORT",
    "DF109": "the final stage has a HEALTHCHECK (not NONE)",
    "DF115": "no SSH host keys baked into the image (every container would share them)",
    "DF120": "builds offline with both builders: no `# syntax=` directive, no BuildKit-only "
             "flags (COPY/ADD --chmod/--link, RUN --mount/--network/--security)",
    "DC203": "host networking: SSH_PORT set, not 22, unique per file; no ports:",
    "DC204": "bridge networking: SSH_PORT published on a fixed host port; host ports unique",
    "DC205": "SSH host keys in a volume at /etc/ssh/host_keys",
    "DC206": "authorized keys mounted at /etc/ferry/authorized_keys or SSH_AUTHORIZED_KEYS set",
    "DC208": "/dev/shm: ipc: host or shm_size (Docker's default is 64 MB), not both",
    "DC210": "init: true (PID 1 reaps orphans)",
    "DC211": "hostnames unique across services",
    "SH300": "entrypoint: bash -n and shellcheck (when installed)",
    "SD400": "sshd_config: key-only login; accepted by sshd -t (when installed)",
    "CC500": "docker compose config / docker-compose config accepts the file, an override "
             "file merged onto each base file (when installed)",
}


class Findings:
    def __init__(self):
        self.items = []

    def add(self, path, line, rule, severity, msg):
        """rule None: a file the rules cannot read (unreadable, not YAML, ...)."""
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
            what = f"{rule} {sev}" if rule else sev
            print(f"{where}: {what}: {msg}", file=out)
