"""vramscope record --torch-memory: PyTorch's CUDA allocator history, with no change to the script.

vramscope puts a private directory holding only this file first on PYTHONPATH, so every Python
process of the recorded run imports it at start-up (site.py imports `sitecustomize`). It:

1. imports the next `sitecustomize` on the path (the user's or the distribution's), so
   whatever the environment set up still happens, errors included;
2. waits for the program to import `torch` (it never imports torch itself) and then, through
   torch.cuda._lazy_call, for the program to initialise CUDA (it never initialises CUDA itself:
   that would change forking, CUDA_VISIBLE_DEVICES set later, CPU-only runs); then calls
   torch.cuda.memory._record_memory_history(max_entries=N) (torch >= 2.1; the torch 2.0
   signature is tried next) and attaches an out-of-memory observer;
3. writes torch.cuda.memory._snapshot() as a pickle (what _dump_snapshot writes) when the
   allocator runs out of memory (the first few times) and at exit, into vramscope's directory
   beside the recording, and reports each step, or why nothing happened, as JSON lines that
   vramscope turns into notes in the recording;
4. tags the storages of the program's parameters, their gradients and its optimizers' state
   (data pointer and size, on CUDA) after every optimizer step (a global step post-hook;
   optimizers found at construction on torch < 2.0) and at each snapshot, and writes them
   beside the snapshot (tags-<pid>-<n>.json), so vramscope knows those blocks' categories
   instead of inferring them. Modules called outside any optimizer are found by a global
   forward pre-hook that only remembers the module (a dict lookup per call).

Every failure is caught and reported: the shim must never change what the program does. A
process killed by a signal writes no exit snapshot (its history dies with it); no SIGTERM
handler is installed, since one would delay the default death while the main thread is inside
a long C call (a hung collective), which would change the program.
"""

import os as _os
import sys as _sys


def _vramscope_storage_tags(optimizers, modules, device_type="cuda"):
    """The storages of the parameters, their gradients and the optimizer state tensors that
    live on `device_type`: [(tensor, device index, data_ptr, nbytes, category)], each storage
    once (a tied weight, a parameter both in a module and an optimizer), parameters before
    gradients before optimizer state. `optimizers` and `modules` are iterables of
    torch.optim.Optimizer and torch.nn.Module (modules' own parameters, not recursing)."""
    out = []
    seen = set()
    objects = set()
    on_device = "is_" + device_type  # t.is_cuda: 0.1 µs, t.device.type: 2 µs

    def add(t, category):
        # Measured with torch 2.15 on a loaded 2-core machine: 1,000 parameters under Adam
        # (5,000 tensors with grads and state, modules and optimizer both listing them) took
        # 66 ms a look, about 13 µs a tensor.
        if t is None or id(t) in objects:
            return
        objects.add(id(t))
        try:
            if not getattr(t, on_device):
                return
            storage = t.untyped_storage()
            ptr, nbytes = storage.data_ptr(), storage.nbytes()
            index = max(t.get_device(), 0)
        except Exception:
            return
        if not ptr or not nbytes or (ptr, nbytes) in seen:
            return
        seen.add((ptr, nbytes))
        out.append((t, index, ptr, nbytes, category))

    params = []
    for opt in optimizers:
        for group in getattr(opt, "param_groups", ()):
            params.extend(group.get("params", ()))
    for module in modules:
        try:
            params.extend(module.parameters(recurse=False))
        except Exception:
            pass
    for p in params:
        add(p, "parameter")
    for p in params:
        add(getattr(p, "grad", None), "gradient")
    for opt in optimizers:
        for values in list(getattr(opt, "state", {}).values()):
            if not isinstance(values, dict):
                continue
            for v in values.values():
                for t in (v if isinstance(v, (list, tuple)) else (v,)):
                    if hasattr(t, "untyped_storage"):
                        add(t, "optimizer_state")
    return out


def _vramscope():
    import atexit
    import collections
    import json
    import time
    import weakref

    out_dir = _os.environ.get("VRAMSCOPE_TORCH_DIR")
    if not out_dir:
        return
    try:
        max_entries = int(_os.environ.get("VRAMSCOPE_TORCH_MAX_ENTRIES", "100000"))
    except ValueError:
        max_entries = 100000
    # OOM observers fire on every failed attempt (a convolution retrying with less scratch
    # space fails several times), and each snapshot costs seconds on a long history.
    max_oom_snapshots = 3
    state = {"pid": _os.getpid(), "enabled": False, "seq": 0, "ooms": 0, "torch": None}

    # Storage tags (see _vramscope_storage_tags). The newest `max_entries` tags are kept: a
    # tag older than that many tags is older than the allocator's ring buffer of
    # `max_entries` entries (each new storage tagged is at least one allocation), so its
    # block is either gone from the history or still alive, and tagged again at the snapshot.
    tagger = {"optimizers": None, "modules": {}, "seen": {}, "unhook": None, "next_look": 0.0,
              "tags": collections.deque(maxlen=max(max_entries, 1))}
    # A look costs about 13 µs a tensor (see _vramscope_storage_tags). Looks are spaced so
    # they take at most this share of the run: steps shorter than 1/share looks' time are
    # looked at less often, and the gradients of the steps skipped are inferred (what is
    # alive at a snapshot is always tagged).
    max_look_share = 0.01

    def tagged_now():
        optimizers = list(tagger["optimizers"] or ())
        modules = [m for m in (r() for r in list(tagger["modules"].values())) if m is not None]
        return _vramscope_storage_tags(optimizers, modules)

    def observe():
        """Tag the storages not seen, as the same tensor, at the last look (a gradient made
        anew each step is a new storage; a parameter updated in place is not)."""
        now = time.time_ns()
        seen, now_seen = tagger["seen"], {}
        for t, index, ptr, nbytes, category in tagged_now():
            key = (index, ptr, nbytes, category)
            ref = seen.get(key)
            if ref is None or ref() is not t:
                tagger["tags"].append([index, ptr, nbytes, category, now])
            try:
                now_seen[key] = weakref.ref(t)
            except TypeError:
                pass
        tagger["seen"] = now_seen
        tagger["modules"] = {k: r for k, r in tagger["modules"].items() if r() is not None}

    def on_step(optimizer, args, kwargs):
        try:
            tagger["optimizers"].add(optimizer)
            unhook = tagger["unhook"]
            if unhook is not None:
                # The modules the first step's forward called are remembered; later calls
                # need not go through a global hook (which slows every module call).
                tagger["unhook"] = None
                unhook.remove()
            began = time.perf_counter()
            if began < tagger["next_look"]:
                return
            observe()
            ended = time.perf_counter()
            tagger["next_look"] = ended + (ended - began) / max_look_share
        except Exception as e:
            report("warning", stage="tags", error=repr(e))

    def on_module(module, args):
        modules = tagger["modules"]
        ref = modules.get(id(module))
        if ref is None or ref() is not module:
            try:
                modules[id(module)] = weakref.ref(module)
            except TypeError:
                pass

    def hook_tags(torch):
        tagger["optimizers"] = weakref.WeakSet()
        optim = torch.optim.optimizer
        post_hook = getattr(optim, "register_optimizer_step_post_hook", None)
        if post_hook is not None:
            post_hook(on_step)
        else:
            # torch < 2.0: optimizers are found when made, and tagged at each snapshot.
            cls = optim.Optimizer
            init = cls.__init__

            def tagged_init(self, *args, **kwargs):
                init(self, *args, **kwargs)
                try:
                    tagger["optimizers"].add(self)
                except Exception:
                    pass

            cls.__init__ = tagged_init
        pre_hook = getattr(torch.nn.modules.module, "register_module_forward_pre_hook", None)
        if pre_hook is not None:
            compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)

            def module_pre_hook(module, args):
                if compiling is not None and compiling():
                    return None
                on_module(module, args)
                return None

            tagger["unhook"] = pre_hook(module_pre_hook)

    def write_tags(seq):
        """Beside snapshot `seq`: the kept tags and every tagged storage alive now; the file
        name and the number of tags, or (None, 0) when nothing was tagged."""
        if tagger["optimizers"] is None:
            return None, 0
        now = time.time_ns()
        rows = list(tagger["tags"])
        rows.extend([i, p, n, c, now] for (_, i, p, n, c) in tagged_now())
        if not rows:
            return None, 0
        name = "tags-%d-%d.json" % (_os.getpid(), seq)
        path = _os.path.join(out_dir, name)
        with open(path + ".tmp", "w") as f:
            json.dump({"tags": rows}, f, separators=(",", ":"))
        _os.replace(path + ".tmp", path)
        return name, len(rows)

    def report(event, **fields):
        fields["event"] = event
        fields["pid"] = _os.getpid()
        fields["t_unix_ns"] = time.time_ns()
        try:
            line = json.dumps(fields, default=str)
            with open(_os.path.join(out_dir, "status-%d.jsonl" % _os.getpid()), "a") as f:
                f.write(line + "\n")
        except Exception:
            pass

    def devices(torch):
        out = []
        try:
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                uuid = getattr(p, "uuid", None)
                out.append({"cuda": i, "name": getattr(p, "name", None),
                            "total_bytes": getattr(p, "total_memory", None),
                            "uuid": None if uuid is None else str(uuid)})
        except Exception as e:
            report("warning", stage="devices", error=repr(e))
        return out

    def dump(reason):
        torch = state["torch"]
        if torch is None or not state["enabled"] or state["pid"] != _os.getpid():
            return
        try:
            import pickle
            taken = time.time_ns()
            snap = torch.cuda.memory._snapshot()
            state["seq"] += 1
            name = "snapshot-%d-%d-%s.pickle" % (_os.getpid(), state["seq"], reason)
            path = _os.path.join(out_dir, name)
            with open(path + ".tmp", "wb") as f:
                pickle.dump(snap, f)
            _os.replace(path + ".tmp", path)
            traces = snap.get("device_traces", []) if isinstance(snap, dict) else []
            try:
                tags_file, tags = write_tags(state["seq"])
            except Exception as e:
                tags_file, tags = None, 0
                report("warning", stage="tags", error=repr(e))
            report("snapshot", file=name, reason=reason, bytes=_os.path.getsize(path),
                   entries=sum(len(t) for t in traces), taken_unix_ns=taken,
                   devices=devices(torch), torch_version=getattr(torch, "__version__", None),
                   tags_file=tags_file, tags=tags if tags_file else None)
        except Exception as e:
            report("error", stage="snapshot", reason=reason, error=repr(e))

    def on_oom(device, alloc, device_allocated, device_free):
        state["ooms"] += 1
        if state["ooms"] <= max_oom_snapshots:
            dump("oom")
        elif state["ooms"] == max_oom_snapshots + 1:
            report("warning", stage="oom", error="more out-of-memory errors: no more OOM snapshots")

    def enable():
        # Runs inside torch.cuda._lazy_init: an exception here would break the program's
        # CUDA initialisation (DeferredCudaCallError), so nothing may escape.
        try:
            torch = state["torch"]
            history = torch.cuda.memory._record_memory_history
            try:
                history(max_entries=max_entries)
                api = "_record_memory_history(max_entries=N)"
            except TypeError:
                history(True, trace_alloc_max_entries=max_entries,
                        trace_alloc_record_context=True)
                api = "_record_memory_history(True, trace_alloc_max_entries=N) (torch 2.0)"
            state["enabled"] = True
            try:
                hook_tags(torch)
            except Exception as e:
                report("warning", stage="tags", error=repr(e))
            attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
            if attach is not None:
                attach(on_oom)
            atexit.register(dump, "exit")
            report("enabled", api=api, max_entries=max_entries, oom_observer=attach is not None,
                   torch_version=getattr(torch, "__version__", None), devices=devices(torch))
        except Exception as e:
            report("error", stage="enable", error=repr(e),
                   torch_version=getattr(state["torch"], "__version__", None))

    def on_torch(torch):
        state["torch"] = torch
        try:
            lazy_call = torch.cuda._lazy_call
        except Exception as e:
            report("error", stage="import", error="torch.cuda._lazy_call is missing: %r" % (e,),
                   torch_version=getattr(torch, "__version__", None))
            return
        try:
            lazy_call(enable)
            report("torch_imported", torch_version=getattr(torch, "__version__", None))
        except Exception as e:
            report("error", stage="import", error=repr(e))

    def at_exit():
        if state["pid"] != _os.getpid() or state["enabled"]:
            return
        torch = _sys.modules.get("torch")
        if torch is None:
            report("no_torch")
            return
        version = getattr(torch, "__version__", None)
        try:
            if getattr(getattr(torch, "version", None), "cuda", None) is None:
                reason = "torch %s is a build without CUDA" % version
            elif torch.cuda.is_initialized():
                reason = "allocator history could not be turned on (see the error before)"
            elif not torch.cuda.is_available():
                reason = "CUDA is not available to torch %s (no GPU or driver)" % version
            else:
                reason = "the program never initialised CUDA"
        except Exception as e:
            reason = "torch.cuda could not be queried: %r" % (e,)
        report("no_cuda", reason=reason, torch_version=version)

    class TorchFinder(object):
        """Finds nothing itself: when `torch` is about to be imported, it asks the rest of
        sys.meta_path for the spec and makes the loader call on_torch once torch/__init__
        has run."""

        def find_spec(self, fullname, path=None, target=None):
            if fullname != "torch":
                return None
            try:
                _sys.meta_path.remove(self)
            except ValueError:
                pass
            spec = None
            for finder in list(_sys.meta_path):
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
            loader = getattr(spec, "loader", None)
            exec_module = getattr(loader, "exec_module", None)
            if exec_module is None:
                report("error", stage="import", error="cannot hook the torch loader %r" % (loader,))
                return spec

            def hooked(module):
                exec_module(module)
                try:
                    del loader.exec_module
                except AttributeError:
                    pass
                on_torch(module)

            try:
                loader.exec_module = hooked
            except AttributeError as e:
                report("error", stage="import", error="cannot hook the torch loader: %r" % (e,))
            return spec

    atexit.register(at_exit)
    if "torch" in _sys.modules:
        on_torch(_sys.modules["torch"])
    else:
        _sys.meta_path.insert(0, TorchFinder())


def _vramscope_chain():
    """Import the next sitecustomize on the path, as site.py would have without us."""
    # The program must see its own sys.path, and the next sitecustomize must not be this one
    # again: drop the shim's directory (PYTHONPATH keeps it, so child processes get the shim).
    here = _os.path.dirname(_os.path.realpath(__file__))
    _sys.path[:] = [p for p in _sys.path if _os.path.realpath(p or ".") != here]
    ours = _sys.modules.pop("sitecustomize", None)
    try:
        import importlib

        importlib.import_module("sitecustomize")
    except ImportError as e:
        if getattr(e, "name", None) != "sitecustomize":
            raise
        if ours is not None:
            _sys.modules["sitecustomize"] = ours


try:
    _vramscope()
except Exception:
    pass
_vramscope_chain()
