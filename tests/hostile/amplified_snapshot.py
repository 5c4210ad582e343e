#!/usr/bin/env python3
"""An allocator snapshot that references one block (or one trace entry) many times: each
reference is a 2-byte BINGET of the memoized dict, so a file of 2N bytes names N blocks,
which a reader that copies per reference turns into N full records (issue 40: 5e7
references, 100 MB, took 3.5 GB and aborted).

    tests/hostile/amplified_snapshot.py OUT --refs N [--kind blocks|entries]
"""
import argparse
import pickle

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--refs", type=int, default=50_000_000)
ap.add_argument("--kind", choices=["blocks", "entries"], default="blocks")
a = ap.parse_args()

frames = [{"filename": "train.py", "line": 1, "name": "forward"}]
block = {"address": 1 << 32, "size": 512, "requested_size": 512,
         "state": "active_allocated", "frames": frames}
entry = {"action": "alloc", "addr": 1 << 32, "size": 512, "stream": 0,
         "time_us": 1, "frames": frames}
segment = {"device": 0, "address": 1 << 32, "total_size": 2 << 20,
           "allocated_size": 512, "active_size": 512, "requested_size": 512,
           "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
           "is_expandable": False, "frames": frames,
           "blocks": [block] * (a.refs if a.kind == "blocks" else 1)}
snapshot = {"segments": [segment],
            "device_traces": [[entry] * (a.refs if a.kind == "entries" else 1)],
            "allocator_settings": {}}
with open(a.out, "wb") as f:
    pickle.dump(snapshot, f, protocol=2)
