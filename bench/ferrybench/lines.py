"""The lines the throughput ranks write, and the check of what arrived.

Every rank writes lines of exactly L bytes, newline included, with `yes LINE | head -n N`:
from 5 bytes on, the rank's number in three digits and then the rank's letter ("007hhh\\n"),
below that only the letter ("h\\n"; up to 26 ranks). So a torn or interleaved line cannot
pass for a valid one and the expected byte count is exact. `yes` writes in buffer-sized
chunks that do not end on line ends, so the launcher really has to join partial lines.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import dataclass

LINE = 100  # bytes per line, newline included, unless a case says otherwise

# sh -c GEN LINES [LETTERS DIGITS]: the rank's line, LINES times. Without the last two
# (the docker section's form) a line is the 100-byte one.
GEN = ('r=${RANK:-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}}; '
       'c=$(printf "\\\\$(printf %03o $((97 + r % 26)))"); '
       'body=$(printf "%${1:-96}s" "" | tr " " "$c"); '
       'if [ "${2:-3}" = 3 ]; then body=$(printf %03d "$r")$body; fi; '
       'yes "$body" | head -n "$0"')

# Tags as ferryrun (horovod style), Open MPI --tag-output and hydra -prepend-rank write
# them. Payload lines hold only digits and letters, so a "[" always starts a tag, even in
# the middle of a torn line.
TAG = re.compile(rb"^\[(?:1,)?([0-9]+)\](?:<stdout>:| )")
TAG_ANYWHERE = re.compile(rb"\[(?:1,)?[0-9]+\](?:<stdout>:| )")


def digits(line: int) -> int:
    return 3 if line >= 5 else 0


def letters(line: int) -> int:
    return line - 1 - digits(line)


def gen_argv(lines: int, line: int = LINE) -> list[str]:
    """The rank command: `lines` lines of `line` bytes each."""
    if line < 2:
        raise ValueError("a line needs at least one byte and its newline")
    return ["sh", "-c", GEN, str(lines), str(letters(line)), str(digits(line))]


def rank_line(r: int, line: int = LINE) -> bytes:
    head = b"%03d" % r if digits(line) else b""
    return head + bytes([97 + r % 26]) * letters(line) + b"\n"


@dataclass
class Check:
    """What arrived: whole valid lines per rank, torn lines, and the bytes of each letter
    (so bytes of torn lines count too; ranks 26 apart share a letter)."""

    per_rank_lines: dict[int, int]
    per_letter: dict[int, int]
    torn_lines: int
    first_torn: bytes
    payload_bytes: int
    line: int = LINE

    def lossless(self, ranks: int, lines: int) -> bool:
        want: dict[int, int] = {}
        for r in range(ranks):
            want[r % 26] = want.get(r % 26, 0) + letters(self.line) * lines
        return self.payload_bytes == ranks * lines * self.line and self.per_letter == want

    def intact(self, ranks: int, lines: int) -> bool:
        return self.torn_lines == 0 and all(self.per_rank_lines.get(r, 0) == lines
                                            for r in range(ranks))

    def describe(self, ranks: int, lines: int) -> str:
        want = ranks * lines * self.line
        shown = range(min(ranks, 8))
        text = (f"{self.payload_bytes} of {want} payload bytes; whole lines "
                + ", ".join(f"r{r} {self.per_rank_lines.get(r, 0)}/{lines}" for r in shown)
                + (" ..." if ranks > 8 else ""))
        if self.torn_lines:
            text += f"; {self.torn_lines} torn lines, first {self.first_torn[:70]!r}"
        return text


class _Prefix(io.RawIOBase):
    """The first `left` bytes of a file, for a reused sink longer than one run's output."""

    def __init__(self, f, left: int):
        self.f, self.left = f, left

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self.f.readinto(memoryview(b)[:min(len(b), self.left)]) if self.left else 0
        self.left -= n
        return n


def check_output(path, ranks: int, tagged: bool, line: int = LINE,
                 length: int | None = None) -> Check:
    """Checks the file's lines, or only its first `length` bytes."""
    valid = {rank_line(r, line): r for r in range(ranks)}
    letter_of = {97 + k: k for k in range(26)}
    with open(path, "rb", buffering=0) as raw:
        f = io.BufferedReader(_Prefix(raw, length if length is not None else 1 << 62),
                              buffer_size=1 << 20)
        counts = Counter(f)  # valid lines of a rank are all alike: few keys unless torn
    per_lines: dict[int, int] = {}
    per_letter: dict[int, int] = {}
    torn, first_torn, payload = 0, b"", 0
    for text, n in counts.items():
        body = TAG_ANYWHERE.sub(b"", text) if tagged else text
        payload += n * len(body)
        for c, k in letter_of.items():
            m = body.count(c)
            if m:
                per_letter[k] = per_letter.get(k, 0) + n * m
        r = valid.get(body)
        if tagged:
            m = TAG.match(text)
            if r is not None and (m is None or int(m.group(1)) != r or
                                  len(text) != m.end() + line):
                r = None
        if r is None:
            torn += n
            first_torn = first_torn or text
            continue
        per_lines[r] = per_lines.get(r, 0) + n
    return Check(per_lines, per_letter, torn, first_torn, payload, line)
