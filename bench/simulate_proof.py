#!/usr/bin/env python3
"""The allocator model's proof on every real snapshot (issue 35), as a table.

Runs `vramscope simulate --format json` on each allocator snapshot under
../shared/traces/real (or the directories given) and writes, per snapshot and device: the
allocations replayed, the share placed at the recorded address, the start blocks the proof
had to re-size, whether the final segments equal the snapshot's, the measured reserved
peak against the recorded-settings replay's, and expandable segments' reserved peak. The
table replaces the part of docs/ALLOCATOR.md between its `proof:begin`/`proof:end`
markers.

    python3 bench/simulate_proof.py --binary target/release/vramscope
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ALLOCATOR.md"


def gib(n):
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def setting(dev, conf):
    return next((s for s in dev["settings"] if s["allocator_conf"] == conf), None)


def rows(binary, snap):
    out = subprocess.run(
        [binary, "simulate", str(snap), "--format", "json"],
        check=True, capture_output=True, text=True,
    ).stdout
    for dev in json.loads(out)["devices"]:
        proof = dev["proof"] or {}
        recorded = setting(dev, dev["recorded_conf"])
        expandable = setting(dev, "expandable_segments:True")
        measured = dev["measured_reserved_peak_bytes"]
        replay = recorded["reserved_peak_bytes"]
        off = (replay - measured) / measured * 100 if measured else 0.0
        saved = replay - expandable["reserved_peak_bytes"] if expandable else 0
        yield (
            f"| {snap.parent.name}/{snap.name} | {dev['device']} "
            f"| {proof.get('allocations', 0):,} "
            f"| {proof.get('placed_share', 0) * 100:.1f} % "
            f"| {proof.get('start_blocks_resized', 0)} "
            f"| {'yes' if proof.get('final_segments_identical') else '**no**'} "
            f"| {gib(measured)} | {gib(replay)} ({off:+.1f} %) "
            f"| {gib(expandable['reserved_peak_bytes']) if expandable else '–'} "
            f"({gib(abs(saved))} {'less' if saved >= 0 else 'more'}) |"
        ), proof


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=str(ROOT / "target/release/vramscope"))
    ap.add_argument("dirs", nargs="*", default=[str(ROOT.parent / "shared/traces/real")])
    ap.add_argument("--no-write", action="store_true", help="print only")
    a = ap.parse_args()
    snaps = sorted(p for d in a.dirs for p in pathlib.Path(d).rglob("*.pickle"))
    lines = [
        "| snapshot | device | allocations | placed as recorded | start blocks re-sized "
        "| final segments identical | measured reserved peak | replayed (recorded settings) "
        "| expandable_segments:True |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    total = placed = 0
    for snap in snaps:
        for line, proof in rows(a.binary, snap):
            lines.append(line)
            total += proof.get("allocations", 0)
            placed += proof.get("placed_as_recorded", 0)
    lines.append("")
    lines.append(f"{len(snaps)} snapshots, {placed:,} of {total:,} allocations placed at "
                 "their recorded address.")
    table = "\n".join(lines)
    print(table)
    if a.no_write:
        return
    text = DOC.read_text()
    block = f"<!-- proof:begin (bench/simulate_proof.py) -->\n{table}\n<!-- proof:end -->"
    if "<!-- proof:begin" not in text:
        sys.exit(f"{DOC}: no proof:begin marker")
    DOC.write_text(re.sub(r"<!-- proof:begin.*?<!-- proof:end -->", block, text, flags=re.S))


if __name__ == "__main__":
    main()
