#!/usr/bin/env python3
"""Checks that the folders of src/ form layers: a folder includes only itself
and the folders below it, so the include graph between folders has no cycle,
and public headers include only public headers.

  scripts/check_layers.py            check the tree (exit 1 on a violation)
  scripts/check_layers.py --graph    also print the folder-level include graph

The order is the one README.md's layout section describes; folders on one
line are side by side (neither includes the other).
"""
import pathlib
import re
import sys

LAYERS = [
    ["core"],
    ["telemetry"],
    ["io", "ir", "comm"],
    ["trace"],
    ["ops"],
    ["transform"],
    ["runtime"],
    ["backend/interp", "backend/llvm"],
    ["backend/cuda"],
    ["cache"],
]
RANK = {folder: rank for rank, line in enumerate(LAYERS) for folder in line}
# io, ir and comm sit side by side above telemetry: collectives, like the
# kernels and compiles above them, record to the execution timeline.
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def folder_of(relative: str) -> str:
    parts = relative.split("/")
    return "/".join(parts[:2]) if parts[0] == "backend" else parts[0]


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent
    src = root / "src"
    problems, edges = [], set()
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cpp", ".def") or not path.is_file():
            continue
        relative = path.relative_to(src).as_posix()
        here = folder_of(relative)
        if here not in RANK:
            problems.append(f"src/{relative}: folder '{here}' has no place in the layer order (scripts/check_layers.py)")
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = INCLUDE.match(line)
            if not match or match.group(1).startswith("kiln/"):
                continue
            target = folder_of(match.group(1))
            if target == here:
                continue
            edges.add((here, target))
            if target not in RANK:
                problems.append(f"src/{relative}:{number}: includes '{match.group(1)}' from unknown folder '{target}'")
            elif RANK[target] >= RANK[here]:
                where = "a layer above" if RANK[target] > RANK[here] else "a folder beside"
                problems.append(f"src/{relative}:{number}: '{here}' includes '{match.group(1)}' from {where} it ('{target}')")
    for path in sorted((root / "include" / "kiln").glob("*.h")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = INCLUDE.match(line)
            if match and not match.group(1).startswith("kiln/"):
                problems.append(f"include/kiln/{path.name}:{number}: public header includes internal '{match.group(1)}'")
    if "--graph" in sys.argv:
        for here, target in sorted(edges, key=lambda e: (RANK.get(e[0], 99), e[1])):
            print(f"{here} -> {target}")
    for problem in problems:
        print(problem, file=sys.stderr)
    order = " -> ".join(" | ".join(line) for line in LAYERS)
    if problems:
        print(f"layers: {len(problems)} include(s) break the order {order}", file=sys.stderr)
        return 1
    print(f"layers ok: {order}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
