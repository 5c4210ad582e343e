"""A small real training run on CUDA for vramscope's GPU checks (bench/gpu/run.sh).

  train.py --steps N                 train a transformer LM (AdamW) for N steps
  train.py --oom                     train with a per-process memory cap and a batch that
                                     cannot fit: a real CUDA OOM inside the caching allocator
  train.py --profile OUT.json        also write a torch.profiler trace (CUDA activity,
                                     profile_memory=True) and torch's own key_averages() as
                                     OUT.key_averages.json: ground truth for `vramscope table`
  --device cpu                       the same on CPU (to check the script without a GPU)
"""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--dim", type=int, default=512)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--seq", type=int, default=256)
p.add_argument("--oom", action="store_true")
p.add_argument("--profile")
p.add_argument("--device", default="cuda")
a = p.parse_args()

dev = torch.device(a.device)
V = 8192
torch.manual_seed(0)


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, a.dim)
        layer = nn.TransformerEncoderLayer(a.dim, 8, 4 * a.dim, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, a.layers, enable_nested_tensor=False)
        self.out = nn.Linear(a.dim, V)

    def forward(self, x):
        return self.out(self.blocks(self.emb(x)))


model = LM().to(dev)
opt = torch.optim.AdamW(model.parameters(), 1e-3)
lossf = nn.CrossEntropyLoss()


def step(batch):
    x = torch.randint(0, V, (batch, a.seq), device=dev)
    y = torch.randint(0, V, (batch, a.seq), device=dev)
    loss = lossf(model(x).reshape(-1, V), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


if a.oom:
    if dev.type == "cuda":
        # 4 GiB for this process: the model, Adam's moments and a small batch fit, a batch
        # 16x larger does not.
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, (4 << 30) / total))
    for i in range(3):
        step(a.batch)
    print("small batches fit; now a batch 16x larger", flush=True)
    step(a.batch * 16)  # raises torch.OutOfMemoryError: the run dies of it, as real ones do
    sys.exit(0)

if a.profile:
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    with profile(activities=acts, profile_memory=True, record_shapes=True) as prof:
        for i in range(a.steps):
            with torch.profiler.record_function(f"ProfilerStep#{i}"):
                step(a.batch)
        if dev.type == "cuda":
            torch.cuda.synchronize()
    prof.export_chrome_trace(a.profile)
    rows = [
        dict(
            name=e.key,
            calls=e.count,
            self_cpu_memory_usage=e.self_cpu_memory_usage,
            cpu_memory_usage=e.cpu_memory_usage,
            self_device_memory_usage=getattr(e, "self_device_memory_usage", 0),
            device_memory_usage=getattr(e, "device_memory_usage", 0),
        )
        for e in prof.key_averages()
    ]
    base = a.profile[: -len(".json")] if a.profile.endswith(".json") else a.profile
    json.dump(
        dict(torch_version=torch.__version__, args=vars(a), key_averages=rows),
        open(base + ".key_averages.json", "w"),
        indent=1,
    )
    open(base + ".table.txt", "w").write(
        prof.key_averages().table(sort_by="self_cuda_memory_usage", row_limit=25)
    )
    sys.exit(0)

t0 = time.time()
for i in range(a.steps):
    loss = step(a.batch)
    if i % 5 == 0:
        print(f"step {i} loss {loss.item():.3f}", flush=True)
if dev.type == "cuda":
    print(f"max allocated {torch.cuda.max_memory_allocated()} reserved {torch.cuda.max_memory_reserved()}")
print(f"{a.steps} steps in {time.time() - t0:.1f} s")
