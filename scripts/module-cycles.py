#!/usr/bin/env python3
"""Finds import cycles between the modules of each crate of the workspace.

A module is one source file (`src/a.rs`, `src/a/mod.rs`, `src/a/b.rs`). Module A depends on module B when A's
code names a path into B (`use crate::b::Thing`, `crate::b::f()`, `super::b::X`, grouped `use crate::{b, c::D}`).
A path into a module's own ancestors or descendants is containment, not a dependency between peers, and is not
counted (a parent re-exports its children; a child may use what its parent defines). Test code is left out:
`#[cfg(test)]` modules, inline or in their own files.

Prints each cycle as `crate: a -> b -> a` and exits 1 when any crate has one; exits 0 otherwise.
Usage: scripts/module-cycles.py [ROOT]   (ROOT defaults to the repository root)
"""

import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")


def strip_comments_and_strings(text):
    """Blanks comments, string and char literals (keeping newlines) so paths inside them are not read."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a): only the former is skipped.
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def remove_test_modules(code):
    """Removes `#[cfg(test)] mod x { ... }` blocks and returns (code, names of `#[cfg(test)] mod x;`)."""
    test_files = set(re.findall(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code))
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", code)
        if not m:
            break
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        code = code[: m.start()] + "\n" * code.count("\n", m.start(), j) + code[j:]
    return code, test_files


def expand_use_groups(code):
    """Turns `crate::a::{b, c::{d, e}}` into the flat paths `crate::a::b`, `crate::a::c::d`, ... ."""
    paths = []
    for m in re.finditer(r"\b(crate|super|self)((?:\s*::\s*\w+)*)\s*::\s*\{", code):
        prefix = re.sub(r"\s+", "", m.group(1) + m.group(2))
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        paths.extend(flatten(prefix, code[m.end(): j - 1]))
    return paths


def flatten(prefix, body):
    items, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    items.append(cur)
    out = []
    for item in items:
        item = re.sub(r"\s+as\s+\w+\s*$", "", item.strip())
        item = re.sub(r"\s+", "", item)
        if not item:
            continue
        m = re.match(r"^((?:\w+::)*)\{(.*)\}$", item)
        if m:
            out.extend(flatten(prefix + "::" + m.group(1).rstrip(":"), m.group(2)) if m.group(1) else flatten(prefix, m.group(2)))
        else:
            out.append(prefix + "::" + item)
    return [p.replace("::::", "::") for p in out]


def crate_modules(src):
    """Maps module path tuples (() for the crate root) to their files."""
    mods = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main") and (len(parts) > 1 or parts[-1] != "mod"):
                parts = parts[:-1]
            if rel in ("lib.rs", "main.rs"):
                parts = []
            mods[tuple(parts)] = os.path.join(src, rel)
    return mods


def resolve(path, here, mods):
    """The deepest module a path names, or None when it names none of this crate's modules."""
    segs = path.split("::")
    if segs[0] == "crate":
        base, rest = (), segs[1:]
    else:
        base = here
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
        rest = segs
    best = None
    cur = base
    if cur in mods:
        best = cur
    for s in rest:
        cur = cur + (s,)
        if cur in mods:
            best = cur
        else:
            break
    return best


def related(a, b):
    return a[: len(b)] == b or b[: len(a)] == a


def find_cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def cycle_path(comp, graph):
    """One concrete cycle through the component, for the message."""
    comp = set(comp)
    start = min(comp)
    # Breadth-first from start back to start inside the component.
    prev, queue, seen = {}, [start], {start}
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w not in comp:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in seen:
                seen.add(w)
                prev[w] = v
                queue.append(w)
    return sorted(comp)


def name(m):
    return "::".join(m) if m else "(root)"


def main():
    crates = []
    for group in ("crates", "bin", "tools"):
        d = os.path.join(ROOT, group)
        if os.path.isdir(d):
            crates += [os.path.join(d, c) for c in sorted(os.listdir(d)) if os.path.isdir(os.path.join(d, c, "src"))]
    found = 0
    for crate in crates:
        mods = crate_modules(os.path.join(crate, "src"))
        code_of, test_mods = {}, set()
        for m, f in mods.items():
            with open(f, encoding="utf-8") as fh:
                code, tests = remove_test_modules(strip_comments_and_strings(fh.read()))
            code_of[m] = code
            test_mods |= {m + (t,) for t in tests}
        # Modules that are compiled only for tests, and everything below them.
        live = {m for m in mods if not any(m[: len(t)] == t for t in test_mods)}
        graph = {m: set() for m in live}
        for m in live:
            code = code_of[m]
            paths = re.findall(r"\b(?:crate|super|self)(?:\s*::\s*\w+)+", code)
            paths = [re.sub(r"\s+", "", p) for p in paths] + expand_use_groups(code)
            for p in paths:
                t = resolve(p, m, mods)
                if t is None or t not in live or related(t, m):
                    continue
                graph[m].add(t)
        for comp in find_cycles(graph):
            found += 1
            print(f"{os.path.relpath(crate, ROOT)}: " + " -> ".join(name(x) for x in cycle_path(comp, graph)))
    if found:
        print(f"{found} import cycle(s) between modules: move what both sides need into a module both can use,"
              " or let one side take it as a parameter", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
