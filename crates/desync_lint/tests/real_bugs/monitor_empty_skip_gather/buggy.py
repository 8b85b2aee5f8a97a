"""Per-layer activation monitor for a pipeline-parallel LLM run.

Each rank records statistics for the monitored layers it holds; every N steps the ranks
gather them with all_gather_object and rank 0 appends one JSON line. A pipeline stage that
holds no monitored layer (only padding layers and the LM head) has an empty dict and
returns before the gather, so every other rank blocks in all_gather_object.
"""
import json
from collections import defaultdict

import torch.distributed as dist


def _all_gather_objects(obj):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


class LayerMonitor:
    def __init__(self, model, layer_names, out_path, every=50):
        self.stats = defaultdict(list)
        self.every = every
        self.out_path = out_path
        self.gather_fn = _all_gather_objects if dist.is_initialized() else None
        for name, module in model.named_modules():
            if name in layer_names:
                module.register_forward_hook(self._hook(name))

    def _hook(self, name):
        def record(module, inputs, output):
            self.stats[name].append(float(output.detach().abs().mean()))
        return record

    def gather_and_aggregate(self):
        local = {name: sum(v) / len(v) for name, v in self.stats.items() if v}
        self.stats.clear()
        if not local:
            return {}  # BUG: a stage without monitored layers skips the all_gather_object
        if self.gather_fn is None:
            return local
        merged = {}
        for part in self.gather_fn(local):
            merged.update(part or {})
        return merged

    def on_step_end(self, step):
        if step % self.every:
            return
        merged = self.gather_and_aggregate()
        if dist.get_rank() == 0 and merged:
            with open(self.out_path, "a") as f:
                f.write(json.dumps({"step": step, **merged}) + "\n")
