#!/usr/bin/env python3
"""ARCHITECTURE.md kept true: the map a newcomer reads before a change.

Usage: python3 tests/house/architecture.py [ROOT]   (exit 1 listing what is untrue)

- Every path named in a module table (first column, braces expanded, names without a
  directory taken beside the row's first path; `.rs` files and folders in the second
  column found under the row's folder) exists.
- Every module (a non-test `.rs` file or folder under collector/src and app/src) is named
  in its crate's table: a new module is placed on the map when it is made.
- Every name in the Recipes (a backticked identifier or path) is in the code: a recipe
  that names a trait, constant or file that was renamed or deleted fails here.
"""
import os
import re
import sys

CRATES = {"## collector/": "collector/src", "## app/": "app/src"}
TICKED = re.compile(r"`([^`]+)`")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$")


def sections(text):
    """(heading, body) for each `## ` section."""
    parts = re.split(r"^(## .*)$", text, flags=re.M)
    return [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def expand(path):
    """`cli/{a,b}.rs` → [`cli/a.rs`, `cli/b.rs`]."""
    m = re.search(r"\{([^}]*)\}", path)
    if not m:
        return [path]
    return [out for alt in m.group(1).split(",") for out in expand(path[: m.start()] + alt + path[m.end():])]


def table_rows(body):
    for line in body.splitlines():
        cells = line.split("|")
        if len(cells) >= 4 and not set(cells[1].strip()) <= set("-") and cells[1].strip() != "module":
            yield cells[1], cells[2]


def first_column_paths(cell):
    """The paths of a row's first cell, and the folder the row is about."""
    names = [p for t in TICKED.findall(cell) for p in expand(t)]
    if not names:
        return [], ""
    first = names[0].rstrip("/")
    base = os.path.dirname(first)
    paths = [names[0]] + [n if "/" in n.rstrip("/") else os.path.join(base, n) for n in names[1:]]
    row_dir = first if names[0].endswith("/") else os.path.splitext(first)[0]
    return paths, row_dir


def found_under(src, start, name):
    """Whether `name` (a file or folder path) exists under `src/start` or `src`."""
    for top in (os.path.join(src, start), os.path.join(src, os.path.dirname(start)), src):
        for dirpath, dirnames, filenames in os.walk(top):
            if os.path.exists(os.path.join(dirpath, name.rstrip("/"))):
                return True
    return False


def check_tables(root, text, problems):
    named = {}
    for heading, body in sections(text):
        src = next((s for h, s in CRATES.items() if heading.startswith(h)), None)
        if src is None:
            continue
        words = set()
        for first, second in table_rows(body):
            paths, row_dir = first_column_paths(first)
            for p in paths:
                words.add(p.rstrip("/"))
                if not os.path.exists(os.path.join(root, src, p.rstrip("/"))):
                    problems.append(f"{src}: the table names `{p}`, which does not exist")
            for t in TICKED.findall(second):
                for p in expand(t):
                    if re.fullmatch(r"[\w./+-]+(\.rs|/)", p):
                        words.add(p.rstrip("/"))
                        if not found_under(os.path.join(root, src), row_dir, p):
                            problems.append(f"{src}: `{p}` (row `{first.strip()}`) does not exist")
        named[src] = body
    return named


def is_test(rel):
    parts = rel.split("/")
    name = parts[-1]
    return "tests" in parts or name in ("tests.rs", "testing.rs") or name.startswith(("tests_", "test_")) or name.endswith("_tests.rs")


def check_modules(root, named, problems):
    for src, body in named.items():
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, src)):
            dirnames.sort()
            for name in sorted(dirnames) + sorted(f for f in filenames if f.endswith(".rs")):
                rel = os.path.relpath(os.path.join(dirpath, name), os.path.join(root, src))
                if is_test(rel) or name in ("mod.rs", "lib.rs"):
                    continue
                stem = name[:-3] if name.endswith(".rs") else name
                mentioned = re.search(r"(?<![\w-])" + re.escape(stem) + r"(\.rs|/|`|\b)", body)
                if not mentioned:
                    problems.append(f"{src}/{rel}: a module the table does not name")


def check_recipes(root, text, problems):
    recipes = next((b for h, b in sections(text) if h == "## Recipes"), "")
    code = []
    for top in ("collector", "app", "tests", "bench"):
        for dirpath, _, filenames in os.walk(os.path.join(root, top)):
            if "/target" in dirpath:
                continue
            for f in filenames:
                if f.endswith((".rs", ".py", ".sh")):
                    with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                        code.append(fh.read())
    code = "\n".join(code)
    for t in TICKED.findall(recipes):
        for p in expand(t):
            if "/" in p:
                path = next(w for w in p.split(" ") if "/" in w).rstrip("/")
                if not any(found_under(os.path.join(root, c), "", path) for c in ("collector/src", "app/src")) and not os.path.exists(os.path.join(root, path)):
                    problems.append(f"Recipes: `{p}` does not exist")
            elif IDENT.match(p) and not re.search(r"\b" + re.escape(p.split("::")[-1]) + r"\b", code):
                problems.append(f"Recipes: `{p}` is in no source file")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    with open(os.path.join(root, "ARCHITECTURE.md"), encoding="utf-8") as fh:
        text = fh.read()
    problems = []
    named = check_tables(root, text, problems)
    check_modules(root, named, problems)
    check_recipes(root, text, problems)
    for p in problems:
        print(p)
    print(f"ARCHITECTURE.md: {len(problems)} untrue" if problems else "ARCHITECTURE.md: true")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
