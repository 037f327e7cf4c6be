#!/usr/bin/env python3
"""check_layers.py: kiln's layers call only downward, no files form a loop, and
no source file is too long.

Usage: check_layers.py SRC_DIR OBJ_DIR...

SRC_DIR is the repository's src/; each OBJ_DIR is a CMake object folder
whose .o files mirror src/ (CMakeFiles/kiln_obj.dir/src, ...). Checked:
  1. an #include "..." in src/<layer>/ names a file of the same or a lower layer;
  2. a symbol a layer's object uses is defined in the same or a lower layer
     (read with nm, so a call through no header at all is caught too);
  3. no files include or call each other in a loop, in any layer: the
     graph of file-to-file includes and calls has no cycle;
  4. no .c or .h file under SRC_DIR is over MAX_LINES (1,200) lines: a file
     that grows past it is split by concept, one part calling the other.
Exit 0 when all hold; otherwise each violation is printed and the exit is 1.
"""
import os
import re
import subprocess
import sys

# Lowest first: a layer may use itself and the layers before it.
LAYERS = ["base", "runtime", "target", "tir", "te", "codegen", "graph", "ops", "passes",
          "contrib", "frontend", "driver", "tune"]
RANK = {name: i for i, name in enumerate(LAYERS)}

# The most lines a source file under SRC_DIR may have.
MAX_LINES = 1200


def layer_of(rel):
    top = rel.split("/", 1)[0]
    return top if top in RANK else None


def include_edges(src):
    """(from, to) pairs of src-relative paths, for #include "..." lines."""
    edges = []
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)
            with open(path, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m or m.group(1).startswith("kiln/"):
                        continue
                    target = os.path.normpath(os.path.join(os.path.dirname(rel), m.group(1)))
                    if os.path.exists(os.path.join(src, target)):
                        edges.append((rel, target))
    return edges


def long_files(src):
    """(src-relative path, line count) of each .c/.h file over MAX_LINES lines."""
    out = []
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(root, f)
            with open(path, encoding="utf-8", errors="replace") as fh:
                n = sum(1 for _ in fh)
            if n > MAX_LINES:
                out.append((os.path.relpath(path, src), n))
    return sorted(out)


def nm(path, *flags):
    out = subprocess.run(["nm", *flags, path], capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def symbol_edges(src, obj_dirs):
    """(from, to) pairs of src-relative .c paths: `from` uses a symbol `to` defines.
    Objects whose source is gone (a stale build folder) are ignored."""
    objs = {}
    for d in obj_dirs:
        for root, _, files in os.walk(d):
            for f in files:
                if f.endswith(".c.o"):
                    rel = os.path.relpath(os.path.join(root, f), d)[: -len(".o")]
                    if layer_of(rel) and os.path.exists(os.path.join(src, rel)):
                        objs[rel] = os.path.join(root, f)
    defined = {}
    for rel, path in objs.items():
        for line in nm(path, "--defined-only"):
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBRVW" and parts[1].isupper():
                defined.setdefault(parts[2], rel)
    edges = []
    for rel, path in objs.items():
        for line in nm(path, "-u"):
            sym = line.split()[-1]
            if sym in defined and defined[sym] != rel:
                edges.append((rel, defined[sym], sym))
    return objs, edges


def cycles(nodes_edges):
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    graph = {}
    for a, b in nodes_edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return out


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    src, obj_dirs = sys.argv[1], sys.argv[2:]
    bad = []
    inc = include_edges(src)
    for a, b in inc:
        la, lb = layer_of(a), layer_of(b)
        if la and lb and RANK[lb] > RANK[la]:
            bad.append(f"include upward: {a} includes {b} ({la} -> {lb})")
    objs, calls = symbol_edges(src, obj_dirs)
    if not objs:
        print(f"check_layers: no object files under {obj_dirs}")
        return 1
    for a, b, sym in calls:
        la, lb = layer_of(a), layer_of(b)
        if RANK[lb] > RANK[la]:
            bad.append(f"call upward: {a} uses {sym} of {b} ({la} -> {lb})")
    # files are the nodes: includes go to headers, calls from .c to .c
    edges = {(a, b) for a, b in inc if a != b}
    edges |= {(a, b) for a, b, _ in calls if a != b}
    for comp in cycles(edges):
        why = [f"{a} -> {b}" for a, b in sorted(edges) if a in comp and b in comp]
        bad.append("files in a loop: " + ", ".join(comp) + "\n    " + "\n    ".join(why))
    for rel, n in long_files(src):
        bad.append(f"file too long: {rel} ({n} lines, the limit is {MAX_LINES:,})")
    for b in bad:
        print("check_layers: " + b)
    print(f"check_layers: {len(objs)} objects, {len(calls)} cross-file calls, "
          f"{len(inc)} includes; {len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
