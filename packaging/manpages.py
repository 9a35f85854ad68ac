#!/usr/bin/env python3
"""The man pages and shell completions of ferryrun, ferryd and ferry, written from the
programs' own --help, so that an option is described in one place (its definition in the
code) and the page, the completion and --help cannot drift apart.

  manpages.py man BINDIR TEMPLATE OUT VERSION DATE   one page: TEMPLATE's @OPTIONS@ filled
  manpages.py bash BINDIR OUT                        bash completion of ferryrun and ferry
  manpages.py zsh BINDIR OUT                         zsh completion of ferryrun and ferry
  manpages.py options BINDIR PROGRAM                 the options --help lists, one a line

A TEMPLATE is roff written by hand (name, description, examples, exit status, files) with
@OPTIONS@ where the options go, @VERSION@ and @DATE@.
"""
import os
import re
import subprocess
import sys

# Values that --help states in words rather than as a {list}: what completion offers for them.
# tests/packaging checks that ferryrun takes every one.
VALUES = {
    "--bind-to": "none core hwthread socket numa",
    "--map-by": "slot node core socket numa ppr:1:node slot:PE=2 node:OVERSUBSCRIBE",
    "--rank-by": "slot node",
    "--compat": "horovodrun mpirun",
    "--stdin": "0 none",
    "--signal": "INT TERM USR1 USR2 QUIT",
    "--since": "100 all",
    "--idle": "30m 2h never",
}
# The word --help shows for an option's value, when it names what completion should offer.
KIND_OF_WORD = {
    "FILE": "files", "FILE.html": "files", "FILE.json": "files", "PATH": "files",
    "DIR": "dirs", "DIR[:DEST]": "dirs", "HOSTS": "hosts", "IFACES": "ifaces",
    "ID": "jobs", "NAME": "pools",
}
# Options whose value is a file though --help names it otherwise.
KIND_OF_OPTION = {"--rankfile": "files", "--env-file": "files", "--config": "files",
                  "--hostfile": "files", "--machinefile": "files"}


class Option:
    def __init__(self, names, word, help_text, group):
        self.names = names          # ["-n", "--np"]
        self.word = word            # "N", "{auto,ssh}", "" for a flag
        self.help = help_text
        self.group = group
        self.repeat = False         # may be given more than once (--help says "...")

    def choices(self):
        m = re.match(r"^\{([^}]*)\}", self.word)
        if m:
            return m.group(1).split(",")
        for n in self.names:
            if n in VALUES:
                return VALUES[n].split()
        return None

    def kind(self):
        """What completion offers for the value: "" (a flag), words:..., files, hosts, ..."""
        if not self.word:
            return ""
        c = self.choices()
        if c:
            return "words:" + " ".join(c)
        for n in self.names:
            if n in KIND_OF_OPTION:
                return KIND_OF_OPTION[n]
        first = self.word.split()[0]
        return KIND_OF_WORD.get(first, "any")


class Help:
    def __init__(self, text):
        self.text = text
        self.description = []   # lines before "Usage:"
        self.usage = ""
        self.groups = []         # [(name, [Option])]
        self.positionals = []    # [Option] (names without dashes)
        self.subcommands = []    # [(name, help)]
        self.prose = []          # paragraphs of text that are neither


def parse_help(text):
    """CLI11's --help, and the hand-written ones of ferry up/down/pools, which keep its form:
    a 'Group:' line, then '  -x,--long WORD   text' lines (the text on the next line,
    indented, when the names are long)."""
    h = Help(text)
    section = None
    last = None
    seen_usage = False
    for line in text.splitlines():
        if not line.strip():
            last = None
            continue
        if line.startswith("Usage:"):
            h.usage = line[len("Usage:"):].strip()
            seen_usage = True
            section = None
            continue
        if not line.startswith(" ") and line.endswith(":") and len(line) < 40:
            section = line[:-1]
            if section not in ("Positionals", "Subcommands"):
                h.groups.append((section, []))
            last = None
            continue
        if not seen_usage:
            h.description.append(line)
            continue
        m = re.match(r"^ {2}(\S.*?)(?: {2,}(\S.*))?$", line)
        if section and m and not line.startswith("    "):
            head, rest = m.group(1), m.group(2) or ""
            if section == "Subcommands":
                h.subcommands.append((head, rest))
                last = None
                continue
            names_part, _, word = head.partition(" ")
            names = [n.strip() for n in names_part.split(",") if n.strip()]
            word = re.sub(r"\s*\(Env:[^)]*\)", "", word).strip()
            repeat = word.endswith("...")
            word = re.sub(r"\s*\.\.\.$", "", word).strip()
            word = re.sub(r"\s*REQUIRED$", "", word).strip()
            opt = Option(names, word, rest, section)
            opt.repeat = repeat
            if section == "Positionals":
                h.positionals.append(opt)
            else:
                h.groups[-1][1].append(opt)
            last = opt
            continue
        if last is not None and line.startswith("    "):
            last.help = (last.help + " " + line.strip()).strip()
            continue
        section = None
        last = None
        h.prose.append(line)
    return h


def run_help(bindir, *args):
    out = subprocess.run([os.path.join(bindir, args[0]), *args[1:], "--help"],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "COLUMNS": "200"})
    return out.stdout


def ferry_subcommands(bindir):
    """ferry's subcommands, each with its parsed --help."""
    top = parse_help(run_help(bindir, "ferry"))
    return top, [(name, what, parse_help(run_help(bindir, "ferry", name)))
                 for name, what in top.subcommands]


def all_options(bindir, program):
    if program == "ferry":
        top, subs = ferry_subcommands(bindir)
        opts = [o for _, g in top.groups for o in g]
        for _, _, h in subs:
            opts += [o for _, g in h.groups for o in g]
        return opts
    h = parse_help(run_help(bindir, program))
    return [o for _, g in h.groups for o in g]


# ---------------------------------------------------------------------------- roff

def roff_text(s):
    """Plain text as a roff line: backslashes and hyphens escaped (so that --options render
    as the ASCII minus one can paste), no line that a roff request could start."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    if s[:1] in (".", "'"):
        s = "\\&" + s
    return s


def roff_option(o):
    names = ", ".join("\\fB" + roff_text(n) + "\\fR" for n in o.names)
    word = " \\fI" + roff_text(o.word) + "\\fR" if o.word else ""
    return ".TP\n" + names + word + "\n" + roff_text(o.help) + "\n"


def roff_groups(groups):
    """Options by group, a subsection each but the first ("Options")."""
    out = []
    for name, opts in groups:
        if not opts:
            continue
        if name != "Options":
            out.append(".SS " + roff_text(name) + "\n")
        out += [roff_option(o) for o in opts]
    return "".join(out)


def roff_options(bindir, program):
    if program != "ferry":
        return roff_groups(parse_help(run_help(bindir, program)).groups)
    top, subs = ferry_subcommands(bindir)
    out = [roff_groups(top.groups)]
    for name, what, h in subs:
        out.append(".SS ferry " + roff_text(name) + "\n")
        usage = h.usage or "ferry " + name
        out.append(".B " + roff_text(usage) + "\n.br\n" + roff_text(what) + "\n")
        for p in h.positionals:
            out.append(".TP\n\\fI" + roff_text(p.names[0].upper()) + "\\fR\n" +
                       roff_text(p.help) + "\n")
        # A command's options are its "Options" group alone: no subsection of their own.
        out.append(roff_groups([(g, [o for o in opts if o.names != ["-h", "--help"]])
                                for g, opts in h.groups]))
    return "".join(out)


def write_man(bindir, template, out, version, date):
    program = os.path.basename(template).split(".")[0]
    with open(template, encoding="utf-8") as f:
        text = f.read()
    text = (text.replace("@OPTIONS@", roff_options(bindir, program).rstrip("\n"))
            .replace("@VERSION@", version).replace("@DATE@", date))
    write_if_changed(out, text)


def write_if_changed(path, text):
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


# ---------------------------------------------------------------------------- bash

def shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def bash_table(var, opts):
    """declare -A var=([--np]=any [-H]=hosts ...): every option's name to its value's kind
    ("" for a flag)."""
    items = []
    for o in opts:
        for n in o.names:
            items.append("[" + n + "]=" + shell_quote(o.kind()))
    return "declare -gA " + var + "=(" + " ".join(items) + ")\n"


def write_bash(bindir, out):
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "completion", "ferry.bash.in"), encoding="utf-8") as f:
        template = f.read()
    data = [bash_table("_ferryrun_opts", all_options(bindir, "ferryrun"))]
    top, subs = ferry_subcommands(bindir)
    data.append("_ferry_subcommands=" + shell_quote(" ".join(n for n, _, _ in subs)) + "\n")
    run_hosts = ferryrun_host_options(bindir)
    for name, _, h in subs:
        opts = [o for _, g in h.groups for o in g]
        if name == "up":
            opts += run_hosts
        data.append(bash_table("_ferry_" + name + "_opts", opts))
    write_if_changed(out, template.replace("@DATA@", "".join(data).rstrip("\n")))


def ferryrun_host_options(bindir):
    """The options ferry up takes as ferryrun does: its Hosts and SSH groups, --config and
    --ferryd."""
    h = parse_help(run_help(bindir, "ferryrun"))
    out = []
    for g, opts in h.groups:
        for o in opts:
            if g in ("Hosts", "SSH") or set(o.names) & {"--config", "--ferryd"}:
                out.append(o)
    return out


# ---------------------------------------------------------------------------- zsh

def zsh_escape(s):
    return s.replace("\\", "\\\\").replace("'", "'\\''").replace("[", "\\[").replace(
        "]", "\\]").replace(":", "\\:")


def zsh_action(o):
    k = o.kind()
    if k.startswith("words:"):
        return "(" + k[len("words:"):] + ")"
    return {"files": "_files", "dirs": "_files -/", "hosts": "_ferry_hosts",
            "ifaces": "_net_interfaces", "jobs": "_ferry_jobs", "pools": "_ferry_pools",
            "any": " "}.get(k, " ")


def zsh_specs(opts):
    lines = []
    for o in opts:
        first = o.help.split(". ")[0].split("; ")[0]
        if len(first) > 90:
            first = first[:87] + "..."
        desc = zsh_escape(first)
        excl = "(" + " ".join(o.names) + ")" if len(o.names) > 1 and not o.repeat else ""
        if o.repeat:
            excl = "*"
        for n in o.names:
            arg = ":" + zsh_escape(o.word.lower() or "value") + ":" + zsh_action(o) if o.word else ""
            lines.append("  '" + excl + n + "[" + desc + "]" + arg + "'")
    return " \\\n".join(lines)


def write_zsh(bindir, out):
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "completion", "ferry.zsh.in"), encoding="utf-8") as f:
        template = f.read()
    run = all_options(bindir, "ferryrun")
    top, subs = ferry_subcommands(bindir)
    run_hosts = ferryrun_host_options(bindir)
    cases = []
    for name, what, h in subs:
        opts = [o for _, g in h.groups for o in g]
        if name == "up":
            opts += run_hosts
        pos = ""
        if any(p.names[0] == "id" for p in h.positionals):
            pos = " \\\n  ':job id:_ferry_jobs'"
        if name == "down":
            pos = " \\\n  '*:pool:_ferry_pools'"
        cases.append("    (" + name + ")\n      _arguments -s \\\n" + zsh_specs(opts) + pos +
                     "\n      ;;")
    subcommands = " \\\n".join("    '" + n + ":" + zsh_escape(w) + "'" for n, w, _ in subs)
    text = (template.replace("@FERRYRUN_SPECS@", zsh_specs(run))
            .replace("@FERRY_SUBCOMMANDS@", subcommands)
            .replace("@FERRY_CASES@", "\n".join(cases)))
    write_if_changed(out, text)


def main(argv):
    if len(argv) >= 6 and argv[0] == "man":
        write_man(*argv[1:6])
    elif len(argv) == 3 and argv[0] == "bash":
        write_bash(argv[1], argv[2])
    elif len(argv) == 3 and argv[0] == "zsh":
        write_zsh(argv[1], argv[2])
    elif len(argv) == 3 and argv[0] == "options":
        for o in all_options(argv[1], argv[2]):
            print(" ".join(o.names))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
