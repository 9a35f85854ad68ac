#!/usr/bin/env python3
"""in_pty: runs a command as the session leader of a new pseudo-terminal, the way a login
shell's terminal runs it, and copies what the terminal shows to OUT.

  in_pty.py OUT -- CMD...                 waits for CMD, closes the terminal, exits with
                                          CMD's status
  in_pty.py --hangup-on TEXT OUT -- CMD...  closes the terminal (a hangup, as when the
                                          window or the ssh session goes) as soon as TEXT
                                          has been shown, and exits 0 without waiting
"""
import os
import pty
import sys


def main():
    args = sys.argv[1:]
    hangup_on = None
    if args[:1] == ["--hangup-on"]:
        hangup_on, args = args[1].encode(), args[2:]
    out_path, sep, cmd = args[0], args[1], args[2:]
    assert sep == "--" and cmd, __doc__
    pid, master = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    seen = b""
    with open(out_path, "wb") as out:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal is gone
                data = b""
            if not data:
                break
            out.write(data)
            out.flush()
            seen += data
            if hangup_on is not None and hangup_on in seen:
                os.close(master)  # the terminal goes away: SIGHUP to its session
                return 0
    os.close(master)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) if status else 0


if __name__ == "__main__":
    sys.exit(main())
