"""One CUDA training run under several PYTORCH_CUDA_ALLOC_CONF settings, for the allocator
simulator (issue 35): its proof beyond the default settings, and its predictions against
real re-runs.

  python3 bench/gpu/alloc_conf.py --out OUT        # ~1 minute on an H100
  python3 bench/gpu/alloc_conf.py --child CONF ... # (internal: one run, a fresh process)

Each setting runs in a fresh process (the allocator reads the variable when CUDA starts),
with the same seed and the same sequence of batch shapes: a transformer LM trained on
batches whose sequence length varies step to step, the shape that fragments the cache. Each
run records the allocator's history from its first allocation
(`torch.cuda.memory._record_memory_history`), dumps a snapshot at the end, and writes
`torch.cuda.max_memory_reserved()` / `max_memory_allocated()` beside it. Then, here:

  for f in OUT/*.pickle; do vramscope simulate "$f" --format json > "${f%.pickle}.sim.json"; done

- every snapshot's proof (its own settings: expandable segments, max_split_size_mb and
  roundup_power2_divisions proved, not only the defaults) must place 100 % as recorded;
- the default run's snapshot simulated under each other setting
  (`--allocator-conf CONF`) predicts the reserved peak that setting's real run measured
  (OUT/CONF.json's max_memory_reserved): the prediction's error goes to docs/ALLOCATOR.md.

`--device cpu` is refused: the caching allocator is CUDA's.
"""
import argparse
import json
import os
import subprocess
import sys

SETTINGS = [
    "",
    "expandable_segments:True",
    "max_split_size_mb:128",
    "roundup_power2_divisions:4",
    "garbage_collection_threshold:0.6,max_split_size_mb:256",
]


def name_of(conf):
    return "default" if not conf else conf.replace(":", "-").replace(",", "+")


def child(conf, out, steps):
    import torch
    import torch.nn as nn

    assert torch.cuda.is_available(), "the caching allocator is CUDA's: run on a GPU"
    dev = torch.device("cuda")
    if "garbage_collection_threshold" in conf:
        # torch collects only where a memory fraction is set (the simulation takes the
        # capacity as the allowed memory).
        torch.cuda.set_per_process_memory_fraction(1.0)
    torch.manual_seed(0)
    torch.cuda.memory._record_memory_history(max_entries=1_000_000)
    V, D = 8192, 512
    layer = nn.TransformerEncoderLayer(D, 8, 4 * D, batch_first=True)
    model = nn.Sequential(nn.Embedding(V, D), nn.TransformerEncoder(layer, 4, enable_nested_tensor=False),
                          nn.Linear(D, V)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), 1e-3)
    lossf = nn.CrossEntropyLoss()
    rng = torch.Generator().manual_seed(1)
    for _ in range(steps):
        seq = int(torch.randint(64, 513, (1,), generator=rng))  # varying shapes fragment
        x = torch.randint(0, V, (16, seq), device=dev)
        y = torch.randint(0, V, (16, seq), device=dev)
        loss = lossf(model(x).reshape(-1, V), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    base = os.path.join(out, name_of(conf))
    torch.cuda.memory._dump_snapshot(base + ".pickle")
    json.dump({
        "allocator_conf": conf,
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "steps": steps,
    }, open(base + ".json", "w"), indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="gpu-out/alloc-conf")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--child")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.child is not None:
        return child(a.child, a.out, a.steps)
    for conf in SETTINGS:
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=conf)
        r = subprocess.run([sys.executable, __file__, "--out", a.out, "--steps", str(a.steps),
                            "--child", conf], env=env)
        print(f"{conf or '(defaults)'}: exit {r.returncode}", flush=True)


if __name__ == "__main__":
    main()
