#!/usr/bin/env python3
"""Base traces of three input shapes for bench/shapes.sh, each a real torch.profiler Chrome
trace of a small CPU program (torch >= 2; bench/gen_trace.rs then replays it to size):

    python3 bench/shapes_torch.py {mem|ops|stack} OUT.json [--steps N]

- mem: memory-event dense. `profile_memory=True, record_shapes=False`; each step makes and
  drops lists of small tensors (`torch.empty`, and clones of a split), so every op is a small
  `aten::empty`/`aten::clone` with its allocation and its free: ~2.6 memory events and ~1.3
  ops per KB (the torch CPU training trace of bench/run.sh: ~0.8 and ~1.7).
- ops: op dense, no memory events. `profile_memory=False, record_shapes=True`; chains of tiny
  ops and views (add, relu, view, t, reshape): ~2.4 ops per KB, args with shapes on each.
- stack: stack heavy. `with_stack=True, profile_memory=True, record_shapes=True`; a model of
  24 nested modules with long names, so each op sits under ~50 `python_function` spans
  with long frame names (`file.py(line): name`) and their `CallFrom`/`Python id` args.

Each step is wrapped in `record_function("ProfilerStep#N")` so gen_trace can renumber steps.
"""

import argparse

import torch
from torch.profiler import ProfilerActivity, profile, record_function

# Per-step work, chosen so that one step writes about 1-3 MB of JSON.
MEM_LISTS_PER_STEP = 20
MEM_TENSORS_PER_LIST = 300
OPS_CHAINS_PER_STEP = 20
OPS_CHAIN_LENGTH = 100
STACK_DEPTH = 24
STACK_CALLS_PER_STEP = 20


class Level_with_a_rather_long_descriptive_module_name(torch.nn.Module):
    """One level of the stack-heavy model: a tiny op, then the next level."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward_through_the_nested_level_of_the_model(self, x):
        y = x * 1.0001
        return self.inner(y) if self.inner is not None else y

    def forward(self, x):
        return self.forward_through_the_nested_level_of_the_model(x)


def mem_step():
    for _ in range(MEM_LISTS_PER_STEP):
        kept = [torch.empty(8) for _ in range(MEM_TENSORS_PER_LIST)]
        del kept
        x = torch.randn(64, 64)
        kept = [y.clone() for y in x.split(1)]
        del kept


def ops_step(xs):
    for _ in range(OPS_CHAINS_PER_STEP):
        a = xs[0]
        for x in xs:
            a = (a + x).relu().view(4, 4).t().reshape(16)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["mem", "ops", "stack"])
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, help="default: 4 (5 for ops), so that whole copies come near 100 MB")
    a = ap.parse_args()
    a.steps = a.steps or (5 if a.mode == "ops" else 4)
    torch.manual_seed(0)
    xs = [torch.randn(16) for _ in range(OPS_CHAIN_LENGTH)]
    model = None
    for _ in range(STACK_DEPTH):
        model = Level_with_a_rather_long_descriptive_module_name(model)
    x = torch.randn(32)
    kw = dict(
        activities=[ProfilerActivity.CPU],
        profile_memory=a.mode != "ops",
        record_shapes=a.mode != "mem",
        with_stack=a.mode == "stack",
    )
    with profile(**kw) as prof:
        for i in range(a.steps):
            with record_function(f"ProfilerStep#{i}"):
                if a.mode == "mem":
                    mem_step()
                elif a.mode == "ops":
                    ops_step(xs)
                else:
                    for _ in range(STACK_CALLS_PER_STEP):
                        x = model(x)
    prof.export_chrome_trace(a.out)


if __name__ == "__main__":
    main()
