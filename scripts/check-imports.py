#!/usr/bin/env python3
"""Fail if two files of src/ import each other, directly or around a loop (CI: scripts/test.sh).

Every `crate::...`, `super::...` and `self::...` path in a file (in `use` trees and inline in code, comments
stripped) is resolved to the file that defines the module it names; a file naming something of its own
child modules (a `mod.rs` re-exporting or calling into its children) is structure, not an import, and is
not counted. Any strongly connected set of two or more files is reported with the lines that tie it.
Usage: python3 scripts/check-imports.py [src]
"""
import os
import re
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
SRC = os.path.normpath(SRC)


def module_of(path):
    rel = os.path.relpath(path, SRC)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib"):
        rel = rel[:-1]
    return tuple(rel)


FILES = {}
for root, _, names in os.walk(SRC):
    for n in names:
        if n.endswith(".rs"):
            p = os.path.join(root, n)
            FILES[module_of(p)] = p


def resolve(parts):
    """The file defining the longest module prefix of `parts`."""
    for i in range(len(parts), -1, -1):
        if tuple(parts[:i]) in FILES:
            return tuple(parts[:i])
    return ()


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def expand(tree):
    """`a::{b, c::{d, e}}` -> [[a, b], [a, c, d], [a, c, e]] (`self` stays as the parent)."""
    tree = tree.strip()
    m = re.match(r"^([\w:]*?)(?:::)?\{(.*)\}$", tree, flags=re.S)
    if not m:
        parts = [p for p in tree.split(" as ")[0].strip().split("::") if p]
        return [parts]
    head = [p for p in m.group(1).split("::") if p]
    body, out, depth, cur = m.group(2), [], 0, ""
    items = []
    for ch in body:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    items.append(cur)
    for it in items:
        if it.strip():
            for sub in expand(it):
                out.append(head + sub)
    return out


def absolute(mod, parts):
    """A path as written in module `mod` -> absolute module path (None for external crates)."""
    parts = [p for p in parts if p != "self"] if parts and parts[0] != "self" else parts[1:]
    if not parts:
        return list(mod)
    if parts[0] == "crate":
        return parts[1:]
    base = list(mod)
    while parts and parts[0] == "super":
        base = base[:-1]
        parts = parts[1:]
    return base + parts


edges = {}  # (from, to) -> first line naming it
for mod, path in FILES.items():
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    text = strip_comments(raw)
    paths = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        tree = m.group(1)
        for p in expand(tree):
            if p and p[0] in ("crate", "super", "self"):
                if p[-1] == "*" and p[0] == "super":
                    continue  # `use super::*` in an inline test module: the file itself
                paths.append((p, m.start()))
    for m in re.finditer(r"(?<![\w:])(crate|super)((?:::\w+)+)", text):
        if text[max(0, m.start() - 4) : m.start()].strip().endswith("use"):
            continue
        paths.append(([m.group(1)] + m.group(2).split("::")[1:], m.start()))
    for parts, pos in paths:
        target = resolve(absolute(mod, [p for p in parts if p != "*"]))
        if target == mod or target[: len(mod)] == mod:
            continue  # itself, or one of its own child modules
        line = text.count("\n", 0, pos) + 1
        edges.setdefault((mod, target), f"{path}:{line}: {'::'.join(parts)}")

graph = {}
for a, b in edges:
    graph.setdefault(a, set()).add(b)

# Tarjan's strongly connected components.
index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]


def visit(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on.add(v)
    for w in graph.get(v, ()):
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
            sccs.append(comp)


sys.setrecursionlimit(10000)
for v in list(FILES):
    if v not in index:
        visit(v)

if not sccs:
    print(f"no import cycles between the {len(FILES)} files of {os.path.relpath(SRC)}")
    sys.exit(0)
for comp in sccs:
    names = sorted(os.path.relpath(FILES[m], os.path.dirname(SRC)) for m in comp)
    print("import cycle between " + ", ".join(names) + ":")
    for (a, b), where in sorted(edges.items()):
        if a in comp and b in comp:
            print("  " + os.path.relpath(where, os.path.dirname(SRC)))
sys.exit(1)
