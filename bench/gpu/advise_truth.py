"""Ground truth on CUDA for the advisor's techniques a CPU cannot re-run (issue 36): activation
offload (saved activations to pinned host memory per block, `torch.autograd.graph.save_on_cpu`)
and bitsandbytes' 8-bit Adam — each beside a CUDA base run of the same model, seed and batches,
each in a fresh process, its peak measured as vramscope measures it (the largest CUDA
`Total Allocated` of the trace's `[memory]` events).

NOT RUN YET: no GPU machine was lent when it was written. Run it on one (see README.md):

    python3 bench/gpu/advise_truth.py g01_gpt_adamw_cuda --out $OUT/advise

It reuses tests/fixtures/advise/gen_truth.py's gpt model and batches and writes NAME.json.gz and
NAME.truth.json in that generator's format, so the accuracy test reads them:

    VRAMSCOPE_ADVISE_DIR=$OUT/advise cargo test -p vramscope-collector --test advise -- --nocapture

A variant whose library is missing (bitsandbytes) is left out of the truth and said on stderr.
"""
import argparse, gzip, json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, '..', '..', 'tests', 'fixtures', 'advise')
p = argparse.ArgumentParser()
p.add_argument('name'); p.add_argument('--out', default='.')
p.add_argument('--layers', type=int, default=4); p.add_argument('--dim', type=int, default=512)
p.add_argument('--batch', type=int, default=8); p.add_argument('--seq', type=int, default=512)
p.add_argument('--steps', type=int, default=3); p.add_argument('--seed', type=int, default=21)
p.add_argument('--run'); p.add_argument('--result')
a = p.parse_args()
# gen_truth.py reads its own arguments at import: the same model and batches as its gpt bases.
sys.argv = ['gen_truth.py', a.name, '--model', 'gpt', '--opt', 'adamw', '--layers', str(a.layers),
            '--dim', str(a.dim), '--batch', str(a.batch), '--seq', str(a.seq), '--steps', str(a.steps),
            '--seed', str(a.seed)]
sys.path.insert(0, GEN)
import gen_truth as g  # noqa: E402


def trace_peak(path):
    events = json.load(open(path))['traceEvents']
    return max(e['args']['Total Allocated'] for e in events
               if e.get('name') == '[memory]' and e['args'].get('Device Type', 0) == 1)


def offload_blocks(m, torch):
    """Each block's forward under save_on_cpu(pin_memory=True): its saved tensors go to pinned host
    memory as they are saved and come back when backward unpacks them."""
    ctx = {}
    for b in m.blocks:
        def pre(mod, args):
            ctx[mod] = torch.autograd.graph.save_on_cpu(pin_memory=True); ctx[mod].__enter__()
        def post(mod, args, out):
            ctx.pop(mod).__exit__(None, None, None)
        b.register_forward_pre_hook(pre); b.register_forward_hook(post)


def train(trace_path, variant):
    import torch, torch.nn as nn
    from torch.profiler import profile, ProfilerActivity
    torch.manual_seed(a.seed)
    m = g.build().cuda()
    if variant == 'optimizer_8bit':
        import bitsandbytes as bnb
        opt = bnb.optim.AdamW8bit(m.parameters(), lr=1e-3)
    else:
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    if variant == 'activation_offload':
        offload_blocks(m, torch)
    data = [(x.cuda(), y.cuda()) for x, y in g.batches(torch)]
    lossf = nn.CrossEntropyLoss()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True,
                 record_shapes=True, with_stack=True) as prof:
        for i, (x, y) in enumerate(data):
            with torch.profiler.record_function(f"ProfilerStep#{i}"):
                opt.zero_grad()
                lossf(m(x).reshape(-1, g.V).float(), y).backward()
                opt.step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(trace_path)
    return trace_peak(trace_path)


def main():
    if a.run:
        path = a.result.replace('.result', '.trace.json')
        json.dump([train(path, a.run)], open(a.result, 'w'))
        return
    os.makedirs(a.out, exist_ok=True)
    base = os.path.join(a.out, a.name)
    runs = []
    with tempfile.TemporaryDirectory() as d:
        for variant in ('base', 'activation_offload', 'optimizer_8bit'):
            res = os.path.join(d, variant + '.result')
            r = subprocess.run([sys.executable, __file__, a.name, '--layers', str(a.layers), '--dim', str(a.dim),
                                '--batch', str(a.batch), '--seq', str(a.seq), '--steps', str(a.steps),
                                '--seed', str(a.seed), '--run', variant, '--result', res])
            if r.returncode != 0:
                print(a.name, variant, 'failed: left out of the truth', file=sys.stderr)
                continue
            peaks = json.load(open(res))
            if variant == 'base':
                base_peak = peaks[0]
                with open(res.replace('.result', '.trace.json'), 'rb') as src, gzip.open(base + '.json.gz', 'wb', 9) as dst:
                    dst.write(src.read())
            else:
                runs.append(dict(technique=variant, peaks_bytes=peaks, measured_peak_bytes=peaks[0]))
            print(a.name, variant, peaks, file=sys.stderr)
    import torch
    json.dump(dict(torch_version=torch.__version__, device=torch.cuda.get_device_name(0),
                   args=dict(model='gpt', opt='adamw', layers=a.layers, dim=a.dim, batch=a.batch, seq=a.seq,
                             steps=a.steps, seed=a.seed, cuda=True),
                   base_peak_bytes=base_peak, runs=runs), open(base + '.truth.json', 'w'), indent=1)


if __name__ == '__main__':
    main()
