"""An export callback with optional dependencies. The converter is imported when the run ends;
a job runs one software image on every node, so the import fails on every rank or on none,
and every rank leaves before the gather together. The autocast is chosen from an accelerator
backend probed as the module is imported: the same node type everywhere, so the same dtype
on every rank."""
import logging
from contextlib import contextmanager

import torch
import torch.distributed as dist

logger = logging.getLogger(__name__)

try:
    import torch_npu  # noqa: F401

    torch.npu.set_compile_mode(jit_compile=False)
    HAS_NPU = hasattr(torch, "npu") and torch.npu.is_available()
except Exception:
    HAS_NPU = False


@contextmanager
def autocast_for_node():
    if HAS_NPU:
        with torch.npu.amp.autocast(dtype=torch.float16):
            yield
    else:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            yield


def train_step(model, batch):
    with autocast_for_node():
        loss = model(batch).mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)


class ExportOnEnd:
    def __init__(self, out_dir):
        self.out_dir = out_dir

    def on_train_end(self, model):
        try:
            from safetensors.torch import save_file
        except ImportError:
            logger.error("safetensors is not installed; skipping the export")
            return
        shards = [None] * dist.get_world_size()
        dist.all_gather_object(shards, model.state_dict())
        if dist.get_rank() == 0:
            merged = {k: v for shard in shards for k, v in shard.items()}
            save_file(merged, f"{self.out_dir}/model.safetensors")
