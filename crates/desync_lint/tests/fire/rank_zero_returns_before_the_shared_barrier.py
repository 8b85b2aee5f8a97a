# expect: DSY001 at line 34
"""Rank 0 exports the model while the others wait in the barrier after the `if`. A failed
write passes a barrier of its own before re-raising, but the early return leaves without one:
when the config has no model section rank 0 returns, and the others wait in the barrier
forever. (With a barrier on every way out it is quiet:
quiet/rank_zero_leaves_through_its_own_barrier.py.)"""
import json
import logging
import os

import torch
import torch.distributed as dist

log = logging.getLogger(__name__)


def load_config(path):
    with open(os.path.join(path, "config.json")) as f:
        return json.load(f)


def export(model, checkpoint_dir, output_dir):
    config = None
    if dist.get_rank() == 0:
        try:
            config = load_config(checkpoint_dir)
        except OSError as e:
            log.error("no config in %s: %s", checkpoint_dir, e)

    if dist.get_rank() == 0:
        model_config = config.get("model") if config is not None else None
        if model_config is None:
            log.error("cannot export without a model config")
            return
        try:
            os.makedirs(output_dir, exist_ok=True)
            torch.save(model.state_dict(), os.path.join(output_dir, "model.pt"))
        except Exception:
            log.exception("export failed")
            dist.barrier()
            raise

    dist.barrier()
