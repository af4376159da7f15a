#!/usr/bin/env python3
"""Checks alto's include graph against the layers of docs/architecture.md.

Every `#include "alto/<folder>/..."` in a source or header under the layered folders must point
to the same layer or one below it. `internal/` headers are not installed: a public header must
not include one, and the CLI, the Python module and the samples, which use only alto's public
API, include none. Exits 1 listing every violation.

usage: check-layers.py [ROOT]   (default: the repository holding this script)
"""
import pathlib
import re
import sys

# Lowest first. A folder may include its own layer and every layer before it. Sub-folders of
# models/ are layers of their own: kernels, then blocks, then the architectures.
LAYERS = [
    ("core",),
    ("audio",),
    ("features",),
    ("tokenizers",),
    ("models/internal",),
    ("models/blocks",),
    ("models",),  # architectures: models/*.{h,cpp}, models/<architecture>/
    ("streaming",),
    ("cli", "bindings", "samples"),
]
# Top layers that must not include each other either.
SIBLINGS_APART = {"cli", "bindings", "samples"}

# "alto/models/x.h", "models/x.h" (inside the tree) or <alto/models/x.h> (as an application).
INCLUDE = re.compile(r'^\s*#\s*include\s+(?:"(?:alto/)?|<alto/)([a-z_]+(?:/[a-z_]+)*)/[^">/]+[">]',
                     re.M)


def layer_of(path):
    """(rank, owner) of a repository-relative path, or None outside the layered folders."""
    parts = path.split("/")
    best = None  # the longest folder that holds the path
    for rank, names in enumerate(LAYERS):
        for name in names:
            n = name.split("/")
            if parts[: len(n)] == n and len(parts) > len(n):
                if best is None or len(n) > len(best[1].split("/")):
                    best = (rank, name)
    return best


def violations(root):
    root = pathlib.Path(root)
    found = []
    for file in sorted(root.rglob("*")):
        if file.suffix not in {".h", ".cpp", ".inc"} or not file.is_file():
            continue
        rel = file.relative_to(root).as_posix()
        source = layer_of(rel)
        if source is None:
            continue
        text = file.read_text(errors="replace")
        for match in INCLUDE.finditer(text):
            target_dir = match.group(1)
            target = layer_of(target_dir + "/x.h")
            if target is None:
                continue
            line = text.count("\n", 0, match.start()) + 1
            where = f"{rel}:{line}: includes {match.group(0).split('include')[1].strip()}"
            if target[0] > source[0]:
                found.append(f"{where}: {target[1]}/ is above {source[1]}/")
            elif source[1] in SIBLINGS_APART and target[1] in SIBLINGS_APART and source[1] != target[1]:
                found.append(f"{where}: {source[1]}/ and {target[1]}/ must not include each other")
            if "internal" in target_dir.split("/"):
                if source[1] in SIBLINGS_APART:
                    found.append(f"{where}: {source[1]}/ uses the public API only")
                elif not rel.endswith(".cpp") and "internal" not in rel.split("/"):
                    found.append(f"{where}: a public header must not include an internal one")
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent
    found = violations(root)
    for v in found:
        print(v)
    print(f"check-layers: {len(found)} violation(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
