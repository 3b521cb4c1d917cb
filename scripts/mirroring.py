#!/usr/bin/env python3
"""How much the two store adapters mirror each other.

For every file that both crates/store-sqlite/src and crates/store-postgres/src hold, prints the
share of each side's lines that stand in a run of at least MIN_RUN consecutive lines that also
stands, in the same order, somewhere in its twin (lines compared with white space trimmed; blank
lines and comment-only lines left out on both sides). `scripts/mirroring.py [ROOT] [FILE...]`: ROOT defaults to the repository this script is
in; FILE names (e.g. `lib.rs`) limit the report. Exit status 0 always: the figures are a reading,
not a gate.
"""
import os
import sys

MIN_RUN = 4


def lines(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            text = raw.strip()
            if not text or text.startswith("//"):
                continue
            out.append(text)
    return out


def mirrored(a, b):
    """How many lines of a stand in a run of MIN_RUN lines that b holds too."""
    runs = {tuple(b[i : i + MIN_RUN]) for i in range(len(b) - MIN_RUN + 1)}
    marked = [False] * len(a)
    for i in range(len(a) - MIN_RUN + 1):
        if tuple(a[i : i + MIN_RUN]) in runs:
            marked[i : i + MIN_RUN] = [True] * MIN_RUN
    return sum(marked)


def pct(part, whole):
    return f"{100 * part / whole:.0f}%" if whole else "-"


def main():
    args = sys.argv[1:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if args and os.path.isdir(args[0]):
        root, args = args[0], args[1:]
    sqlite = os.path.join(root, "crates/store-sqlite/src")
    pg = os.path.join(root, "crates/store-postgres/src")
    names = sorted(set(os.listdir(sqlite)) & set(os.listdir(pg)))
    names = [n for n in names if n.endswith(".rs") and (not args or n in args)]
    total_a = total_b = total_ma = total_mb = 0
    print(f"{'file':<16}{'sqlite':>8}{'pg':>8}{'sqlite %':>10}{'pg %':>8}")
    for name in names:
        a, b = lines(os.path.join(sqlite, name)), lines(os.path.join(pg, name))
        ma, mb = mirrored(a, b), mirrored(b, a)
        total_a, total_b = total_a + len(a), total_b + len(b)
        total_ma, total_mb = total_ma + ma, total_mb + mb
        print(f"{name:<16}{len(a):>8}{len(b):>8}{pct(ma, len(a)):>10}{pct(mb, len(b)):>8}")
    if names:
        print(f"{'all twins':<16}{total_a:>8}{total_b:>8}"
              f"{pct(total_ma, total_a):>10}{pct(total_mb, total_b):>8}")


if __name__ == "__main__":
    main()
