"""Per-layer activation monitor for a pipeline-parallel LLM run.

Every rank that reaches `gather_and_aggregate` enters the gather, even with nothing to
report (an empty dict is a valid contribution).
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
