#!/usr/bin/env python3
"""The weights a profiler trace's modules use, by the ops' recorded input shapes: an
independent check of what vramscope reads a CUDA trace's `before_trace` as (docs/CATEGORIES.md).

Usage: python3 bench/weights_by_shapes.py TRACE.json[.gz] ...
Needs a trace made with record_shapes=True and with_stack/with_modules (nn.Module spans).
Each module instance (`nn.Module: Linear_3`) is counted once, at its first call: the weight
(and bias) inputs of the linear, embedding, layer/group/batch/RMS norm or conv op it runs.
Prints: modules counted, their weights' bytes, the ops that gave them.
"""
import collections
import gzip
import json
import sys

# Bytes per element of each `Input type` torch records.
ELEMENT_BYTES = {'c10::BFloat16': 2, 'c10::Half': 2, 'float': 4, 'double': 8, 'long int': 8, 'int': 4}
# The ops whose inputs at these positions are a module's weights (and bias).
WEIGHT_INPUTS = {
    'aten::linear': [1, 2], 'aten::embedding': [0], 'aten::layer_norm': [2, 3],
    'aten::conv2d': [1, 2], 'aten::batch_norm': [1, 2], 'aten::rms_norm': [2],
    'aten::group_norm': [2, 3],
}


def input_bytes(args, i):
    dims = args['Input Dims'][i] if i < len(args['Input Dims']) else []
    if not dims:
        return 0
    n = 1
    for x in dims:
        n *= x
    return n * ELEMENT_BYTES.get(args['Input type'][i], 0)


def main(path):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt') as fh:
        events = [e for e in json.load(fh)['traceEvents'] if e.get('ph') == 'X']
    events.sort(key=lambda e: (str(e.get('tid')), e['ts'], -e.get('dur', 0)))
    weights = {}  # module instance -> its weights' bytes, at its first call
    by_op = collections.Counter()
    stack, thread = [], None
    for e in events:
        if e['tid'] != thread:
            stack, thread = [], e['tid']
        while stack and stack[-1]['ts'] + stack[-1].get('dur', 0) <= e['ts']:
            stack.pop()
        if e['name'] in WEIGHT_INPUTS:
            module = next((s['name'] for s in reversed(stack)
                           if s.get('cat') == 'python_function' and s['name'].startswith('nn.Module:')), None)
            if module and module not in weights:
                weights[module] = sum(input_bytes(e['args'], i) for i in WEIGHT_INPUTS[e['name']])
                by_op[e['name']] += 1
        stack.append(e)
    print(f"{len(weights)} modules, {sum(weights.values())} bytes of weights, {dict(by_op)}")


if __name__ == '__main__':
    for path in sys.argv[1:]:
        print(path)
        main(path)
