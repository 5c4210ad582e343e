#!/usr/bin/env python3
"""House sizes: non-test .rs files over 400 lines and functions over 80 lines.

Usage: python3 tests/house/sizes.py [ROOT]   (exit 1 when anything is over)
Tests are exempt: files under tests/ directories, files named tests.rs, and
`#[cfg(test)]` modules. Relies on rustfmt's layout (a function ends at the first
line that is its own indentation followed by `}`).
"""
import os
import re
import sys

MAX_FILE_LINES = 400
MAX_FN_LINES = 80
FN = re.compile(r"^(\s*)(pub(\([^)]*\))? )?(const )?(async )?(unsafe )?(extern \"C\" )?fn (\w+)")


def is_test_path(path):
    parts = path.split(os.sep)
    return "tests" in parts[:-1] or parts[-1] == "tests.rs" or "benches" in parts


def non_test_lines(lines):
    """The lines outside `#[cfg(test)]` items, as (number, text)."""
    out, skip_indent, pending = [], None, False
    for i, line in enumerate(lines, 1):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if skip_indent is not None:
            if line.rstrip() == " " * skip_indent + "}":
                skip_indent = None
            continue
        if stripped == "#[cfg(test)]":
            pending = True
            continue
        if pending:
            pending = False
            if stripped.endswith("{"):
                skip_indent = indent
                continue
            if stripped.endswith(";"):
                continue
        out.append((i, line))
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    over = []
    for base in ("app/src", "collector/src", "fake-nvml/src"):
        for d, _, files in os.walk(os.path.join(root, base)):
            for f in sorted(files):
                if not f.endswith(".rs"):
                    continue
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root)
                if is_test_path(rel):
                    continue
                with open(path, encoding="utf-8") as fh:
                    lines = fh.read().split("\n")
                kept = non_test_lines(lines)
                if len(kept) > MAX_FILE_LINES:
                    over.append(f"{rel}: {len(kept)} lines (file, limit {MAX_FILE_LINES})")
                by_number = dict(kept)
                for n, line in kept:
                    m = FN.match(line)
                    if not m or line.rstrip().endswith(";"):
                        continue
                    indent = m.group(1)
                    end = n
                    for k in range(n, len(lines) + 1):
                        if lines[k - 1].rstrip() == indent + "}":
                            end = k
                            break
                    length = end - n + 1
                    if length > MAX_FN_LINES and n in by_number:
                        over.append(f"{rel}:{n}: fn {m.group(8)} {length} lines (limit {MAX_FN_LINES})")
    for o in over:
        print(o)
    print(f"{len(over)} over the house sizes")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
