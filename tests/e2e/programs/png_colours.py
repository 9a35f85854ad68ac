#!/usr/bin/env python3
"""png_colours.py FILE RRGGBB...: for each colour, how many pixels of the PNG FILE have it
exactly, one "RRGGBB COUNT" line each. Reads 8-bit RGB and RGBA PNGs (what Chromium's
screenshots are) with the standard library only."""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                sys.exit(f"{path}: not an 8-bit RGB(A) non-interlaced PNG")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    out = []
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        out.append(bytes(line))
        prev = line
    return out, bpp


def main():
    rows, bpp = pixels(sys.argv[1])
    wanted = {bytes.fromhex(c): 0 for c in sys.argv[2:]}
    for row in rows:
        for i in range(0, len(row), bpp):
            px = row[i:i + 3]
            if px in wanted:
                wanted[px] += 1
    for colour, n in wanted.items():
        print(colour.hex(), n)


main()
