#!/usr/bin/env python3
"""report.html in a real browser (issue 38), as its reader would open it: headless
Chromium loads the page of each sample, of the hostile-names fixture, of real traces and
snapshots in ../shared/traces/real and of a two-rank report from file://, and this
checks that

- the page loads with no console error and no request refused by its CSP (nothing may
  leave the file; Chromium logs what the policy blocks),
- the page rendered (the body's data-rendered) and reported no script error (#errors),
- every summary number the page shows beside a device (data-summary-path, data-value)
  equals `summary --format json`'s,
- clicking the timeline (the page's #selftest mode dispatches the mouse events and writes
  what the composition then shows into #selftest) shows what was live at the computed
  instant nearest the click; a wheel notch zooms and a double-click restores the view; a
  click on the per-op table's "# of Calls" heading sorts it,
- the hostile names rendered as text: no element they spelled exists, the title is ours,
- the timeline's canvas is painted (#selftest counts its pixels), and screenshots at
  1000x700 and 1920x1080 are not blank (ImageMagick's colour count).

Usage: tests/html/check.py [--binary target/debug/vramscope] [--out DIR]
Needs chromium and ImageMagick (`apt-get install chromium imagemagick`); .ci/run installs
them. Where firefox is installed too, each page is also drawn by headless Firefox and its
screenshot checked. Screenshots stay in DIR (default /tmp/vramscope-html-check) to look at.
"""
import argparse
import html.parser
import json
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "traces" / "real"
# (name, inputs): one page each; several inputs make a rank table.
PAGES = [
    ("sample-snapshot", [ROOT / "samples/cs336-transformer-snapshot.pickle"]),
    ("sample-trace", [ROOT / "samples/transformer-lm-train-cpu.json.gz"]),
    ("hostile", [ROOT / "tests/fixtures/html/hostile-names.json"]),
    ("real-snapshot", [REAL / "snapshots-cs336-wedsonlin/medium_128_training_memory_snapshot.pickle"]),
    ("real-bert", [REAL / "tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz"]),
    ("real-ranks", [REAL / "snapshots-cs336-wedsonlin/medium_128_inference_memory_snapshot.pickle",
                    REAL / "snapshots-cs336-wedsonlin/medium_256_inference_memory_snapshot.pickle"]),
]
SIZES = ["1000,700", "1920,1080"]
# A blank or nearly blank page has a handful of colours; a drawn chart hundreds.
MIN_COLOURS = 64
# The timeline's canvas: axes, grid and labels paint a few per cent of it, the curves
# far more (32-76% on these pages).
MIN_PAINTED = 0.15
BROWSER_TIMEOUT_S = 60
# Lets the page's script run to its end before the DOM is dumped or the shot taken.
VIRTUAL_TIME_MS = "4000"


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("tests/html/check.py: chromium not found (apt-get install chromium)")


def browse(browser, url, *extra):
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--enable-logging=stderr", "--v=0",
            # Nothing may leave the page; should the CSP fail, no name resolves either.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--virtual-time-budget=" + VIRTUAL_TIME_MS, *extra, url]
    run = subprocess.run(args, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S)
    return run.stdout, run.stderr


def console_errors(stderr):
    bad = []
    for line in stderr.splitlines():
        if "CONSOLE" in line or "Uncaught" in line or "Refused to" in line:
            if "Uncaught" in line or "Refused to" in line or "ERROR:CONSOLE" in line or "Error" in line:
                bad.append(line.strip())
    return bad


class Dom(html.parser.HTMLParser):
    """The dumped DOM's parts this check reads."""

    def __init__(self):
        super().__init__()
        self.tags, self.numbers, self.ids, self.body, self._in, self.title = [], [], {}, {}, None, ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "body":
            self.body = a
        if "data-summary-path" in a and "data-value" in a:
            self.numbers.append((a.get("data-summary-input"), a["data-summary-path"], a["data-value"]))
        if tag in ("pre", "title"):
            self._in = a.get("id", tag)
            self.ids[self._in] = {"attrs": a, "text": ""}

    def handle_endtag(self, tag):
        if tag in ("pre", "title"):
            self._in = None

    def handle_data(self, data):
        if self._in:
            self.ids[self._in]["text"] += data


def check_page(browser, binary, out, name, inputs):
    problems = []
    page = out / (name + ".html")
    args = [binary, "report", *map(str, inputs), "--html", str(page), "--force"]
    said = subprocess.run(args, capture_output=True, text=True)
    if said.returncode != 0:
        return [f"report failed: {said.stderr.strip()}"]
    size = page.stat().st_size
    print(f"  {said.stdout.strip()}")
    url = page.resolve().as_uri()
    dom_text, stderr = browse(browser, url + "#selftest", "--dump-dom")
    problems += [f"console: {line}" for line in console_errors(stderr)]
    dom = Dom()
    dom.feed(dom_text)
    if dom.body.get("data-rendered") != "1":
        problems.append("the page did not finish rendering")
    errors = dom.ids.get("errors", {}).get("text", "").strip()
    if errors:
        problems.append(f"script errors: {errors}")
    if len(inputs) == 1 and inputs[0].is_file():
        summary = json.loads(subprocess.run([binary, "summary", str(inputs[0]), "--format", "json"],
                                            capture_output=True, text=True, check=True).stdout)
        for _, path, value in dom.numbers:
            node = summary
            for part in path.split("."):
                node = node[int(part)] if isinstance(node, list) else node.get(part)
            if str(node) != value:
                problems.append(f"{path}: the page shows {value}, summary says {node}")
        if not dom.numbers:
            problems.append("no summary number in the DOM")
        print(f"  {len(dom.numbers)} summary numbers equal summary --format json's")
    test = json.loads(dom.ids.get("selftest", {}).get("text") or "{}")
    if test.get("clicked"):
        if test["shown_ns"] != test["nearest_ns"] or test["rows"] < 1:
            problems.append(f"click on the timeline: {test}")
        if test.get("painted", 0) < MIN_PAINTED:
            problems.append(f"the timeline is nearly blank: {test.get('painted')} of its pixels painted")
        if not (test.get("zoomed") and test.get("reset")):
            problems.append(f"wheel zoom and double-click reset: {test}")
        print(f"  timeline {test['painted']:.0%} painted; click at {test['clicked_ns'] / 1e6:.3f} ms "
              f"shows {test['rows']} groups: {test['heading'][:70]}")
    elif test.get("compositions", True):
        problems.append(f"the self-test did not click: {test}")
    if "sorted" in test and not test["sorted"]:
        problems.append("the per-op table did not sort by # of Calls")
    if name == "hostile":
        if "img" in dom.tags or dom.tags.count("script") != 2 or "b" in dom.tags:
            problems.append(f"a hostile name made elements: {sorted(set(dom.tags))}")
        if "pwned" in dom.ids.get("title", {}).get("text", ""):
            problems.append("a hostile name ran script")
    for size_arg in SIZES:
        shot = out / f"{name}-{size_arg.replace(',', 'x')}.png"
        _, stderr = browse(browser, url, f"--window-size={size_arg}", f"--screenshot={shot}")
        problems += [f"console ({size_arg}): {line}" for line in console_errors(stderr)]
        colours = int(subprocess.run(["identify", "-format", "%k", str(shot)], capture_output=True,
                                     text=True, check=True).stdout or 0)
        if colours < MIN_COLOURS:
            problems.append(f"{shot.name}: {colours} colours, blank?")
    firefox = shutil.which("firefox")
    if firefox:
        # Where Firefox is installed (CI does not install it): it draws the page too.
        shot = out / f"{name}-firefox-1000x700.png"
        profile = out / "firefox-profile"
        profile.mkdir(exist_ok=True)
        subprocess.run([firefox, "--headless", "--profile", str(profile), "--window-size=1000,700",
                        "--screenshot", str(shot), url], capture_output=True, timeout=BROWSER_TIMEOUT_S)
        colours = int(subprocess.run(["identify", "-format", "%k", str(shot)], capture_output=True,
                                     text=True).stdout or 0)
        if colours < MIN_COLOURS:
            problems.append(f"{shot.name}: {colours} colours, blank?")
    print(f"  {size / 1024:.0f} KiB, screenshots in {out}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=str(ROOT / "target/debug/vramscope"))
    ap.add_argument("--out", default="/tmp/vramscope-html-check")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    browser = chromium()
    failed = 0
    for name, inputs in PAGES:
        missing = [str(p) for p in inputs if not p.exists()]
        if missing:
            print(f"{name}: missing {missing}")
            failed += 1
            continue
        print(f"{name}:")
        problems = check_page(browser, a.binary, out, name, inputs)
        for p in problems:
            print(f"  FAIL {p}")
        failed += bool(problems)
    print(f"{len(PAGES) - failed} of {len(PAGES)} pages pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
