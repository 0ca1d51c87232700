#!/usr/bin/env python3
"""Builds mini/dict/trimmed.dict, the Chinese dictionary embedded in `evolve`.

Input: jieba-rs 0.11.0's `src/data/dict.txt` (MIT; the dictionary of the jieba
project, MIT as well), lines of `word frequency tag`. Output: the words that are all
Han characters with frequency >= THRESHOLD, in a compact binary form decoded by
mini/src/text/dict.rs (format in mini/dict/README.md). Tags are dropped: evolve only
segments. Standard library only; the same input gives the same bytes.

Usage: python3 mini/dict/make-trimmed.py [--threshold N] [--dict PATH] [--out PATH]
"""

import argparse
import glob
import math
import os
import struct
import sys

MAGIC = b"EVDICT1\n"
# Frequencies are stored as one byte q = round(ln(freq) * FREQ_SCALE): 1/16 of a
# natural-log step is a ±3% error on a word's frequency, far below what moves a
# segmentation, and the largest frequency in jieba's dictionary (883 634, q = 219)
# still fits in a byte.
FREQ_SCALE = 16
MAX_UNITS = 15  # a nibble: shared and new UTF-16 units of an entry


def is_han(c):
    """The characters evolve hands to jieba (mini/src/text/mod.rs `is_han`)."""
    o = ord(c)
    return (
        0x3400 <= o <= 0x4DBF
        or 0x4E00 <= o <= 0x9FFF
        or 0xF900 <= o <= 0xFAFF
        or 0x20000 <= o <= 0x2EBEF
    )


def units(word):
    """The word as UTF-16 code units."""
    raw = word.encode("utf-16-le")
    return list(struct.unpack("<%dH" % (len(raw) // 2), raw))


def default_dict():
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    found = sorted(glob.glob(os.path.join(
        home, "registry/src/*/jieba-rs-0.11.0/src/data/dict.txt")))
    if not found:
        sys.exit("jieba-rs 0.11.0 is not in the cargo registry: run `cargo fetch` "
                 "in the workspace, or pass --dict PATH")
    return found[0]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threshold", type=int, default=50,
                    help="keep words with at least this frequency (default 50)")
    ap.add_argument("--dict", default=None, help="jieba dict.txt (default: cargo registry)")
    ap.add_argument("--out", default=os.path.join(here, "trimmed.dict"))
    args = ap.parse_args()

    path = args.dict or default_dict()
    kept, not_han, too_long, rare = [], 0, 0, 0
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) < 2 or not parts[1].isdigit():
                sys.exit("%s:%d: expected `word frequency [tag]`" % (path, line_no))
            word, freq = parts[0], int(parts[1])
            if freq < args.threshold:
                rare += 1
            elif not all(is_han(c) for c in word):
                not_han += 1
            elif len(units(word)) > MAX_UNITS:
                too_long += 1
            else:
                kept.append((units(word), freq))
    kept.sort()

    out = bytearray(MAGIC)
    out += struct.pack("<I", len(kept))
    prev = []
    for word, freq in kept:
        shared = 0
        while shared < min(len(word), len(prev)) and word[shared] == prev[shared]:
            shared += 1
        new = word[shared:]
        if not new:
            sys.exit("duplicate word in %s" % path)
        out.append(shared << 4 | len(new))
        out += struct.pack("<%dH" % len(new), *new)
        out.append(min(255, round(math.log(freq) * FREQ_SCALE)))
        prev = word
    with open(args.out, "wb") as f:
        f.write(out)
    print("%s: %d words (frequency >= %d), %d bytes; left out: %d rarer, %d not all "
          "Han, %d longer than %d units"
          % (args.out, len(kept), args.threshold, len(out), rare, not_han, too_long,
             MAX_UNITS), file=sys.stderr)


if __name__ == "__main__":
    main()
