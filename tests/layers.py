#!/usr/bin/python3
"""The layers of src/ and the parts of src/lock/, checked on every #include (ctest lint.layers).

A file includes only its own folder and the folders below it:

    util <- redis <- lock/ledger <- lock/node <- lock/quorum <- lock <- run, inspect <- cli

(CONTRIBUTING.md says what each is for). The static libraries of CMakeLists.txt make most upward
includes a link error, but not one that uses only a header's types or inline functions; this
reads the includes themselves. Inside src/lock/ no two units (x.hpp with x.cpp) may include each
other, even through others: a cycle is an upward include that has no folder to show it.

    tests/layers.py [SRC]        prints each offending include and exits 1; 0 when there is none
    tests/layers.py --graph SRC  prints the include edges between src/lock's units as counted
"""
import os
import re
import signal
import sys

# Each folder of src/ and the folders it may include besides its own.
BELOW = {
    "util": [],
    "redis": ["util"],
    "lock/ledger": ["redis", "util"],
    "lock/node": ["lock/ledger", "redis", "util"],
    "lock/quorum": ["lock/node", "lock/ledger", "redis", "util"],
    "lock": ["lock/quorum", "lock/node", "lock/ledger", "redis", "util"],
    "run": ["lock", "lock/quorum", "lock/node", "lock/ledger", "redis", "util"],
    "inspect": ["lock", "lock/quorum", "lock/node", "lock/ledger", "redis", "util"],
    "cli": ["run", "inspect", "lock", "lock/quorum", "lock/node", "lock/ledger", "redis", "util"],
}
# The program's entry points, at src/ itself: above every layer.
TOP = ""

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources(src):
    for folder, dirs, files in os.walk(src):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".hpp", ".cpp", ".h", ".cpp.in")):
                yield os.path.join(folder, name)


def includes(path):
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield number, m.group(1)


def unit_of(rel):
    """lock/node/keys.hpp and lock/node/keys.cpp are the unit lock/node/keys."""
    return rel.split(".", 1)[0]


def lock_graph(src):
    """The include edges between src/lock's units, each with the includes that make it."""
    edges = {}
    for path in sources(os.path.join(src, "lock")):
        rel = os.path.relpath(path, src)
        for number, target in includes(path):
            if target.startswith("lock/") and unit_of(target) != unit_of(rel):
                edges.setdefault(unit_of(rel), {}).setdefault(unit_of(target), []).append(
                    f"{os.path.join(os.path.basename(src), rel)}:{number}: includes {target}")
    return edges


def cycles(edges):
    """The strongly connected components of more than one unit (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    nodes = sorted(set(edges) | {b for a in edges for b in edges[a]})

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(1000, 4 * len(nodes)))
    for v in nodes:
        if v not in index:
            visit(v)
    return found


def check(src):
    problems = []
    for path in sources(src):
        rel = os.path.relpath(path, src)
        folder = os.path.dirname(rel)
        shown = os.path.join(os.path.basename(src), rel)
        if folder != TOP and folder not in BELOW:
            problems.append(f"{shown}: folder {folder}/ is in no layer (tests/layers.py BELOW)")
            continue
        for number, target in includes(path):
            to = os.path.dirname(target)
            if to == folder or not to:
                continue  # its own folder, or a header beside it
            if to not in BELOW:
                problems.append(f"{shown}:{number}: includes {target}, of no layer")
            elif folder != TOP and to not in BELOW[folder]:
                allowed = ", ".join(BELOW[folder]) or "nothing outside itself"
                problems.append(f"{shown}:{number}: includes {target}, which points upward: "
                                f"{folder}/ may include only {allowed}")
    edges = lock_graph(src)
    for component in cycles(edges):
        problems.append("units that include each other in src/lock: " + " ".join(component))
        for a in component:
            for b in component:
                for where in edges.get(a, {}).get(b, []):
                    problems.append("  " + where)
    return problems


def graph(src):
    edges = lock_graph(src)
    units = {unit_of(os.path.relpath(p, src)) for p in sources(os.path.join(src, "lock"))}
    on_cycles = 0
    for component in cycles(edges):
        members = set(component)
        on_cycles += sum(1 for a in component for b in edges.get(a, {}) if b in members)
    lines = sum(len(w) for a in edges for w in edges[a].values())
    print(f"src/lock: {len(units)} units, {sum(len(e) for e in edges.values())} edges between "
          f"them ({lines} include lines), {on_cycles} edges on cycles")
    for a in sorted(edges):
        print(f"  {a} -> {' '.join(sorted(edges[a]))}")


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    here = os.path.dirname(os.path.abspath(__file__))
    if argv[:1] == ["--graph"]:
        graph(argv[1] if len(argv) > 1 else os.path.join(here, "..", "src"))
        return 0
    src = os.path.normpath(argv[0] if argv else os.path.join(here, "..", "src"))
    problems = check(src)
    for p in problems:
        print(p)
    if problems:
        print(f"layers: {sum(1 for p in problems if not p.startswith('  '))} problem(s); "
              "tests/layers.py says what may include what")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
