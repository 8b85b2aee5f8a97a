"""Rank 0 exports the model while the others wait in the barrier after the `if`. Each way out
of rank 0's block passes one barrier first: the two early returns issue their own, the export
reaches the one after the `if`, and a failed write issues one and re-raises (the rank dies
loudly, and torchrun stops its peers). Every path through the `if` issues one barrier, so no
rank waits for another however rank 0 leaves. (An early return without the barrier fires:
fire/rank_zero_returns_before_the_shared_barrier.py.)"""
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
        if config is None:
            log.error("cannot export without a config")
            dist.barrier()
            return
        model_config = config.get("model")
        if model_config is None:
            log.error("the config has no model section")
            dist.barrier()
            return
        try:
            os.makedirs(output_dir, exist_ok=True)
            torch.save(model.state_dict(), os.path.join(output_dir, "model.pt"))
        except Exception:
            log.exception("export failed")
            dist.barrier()
            raise

    dist.barrier()
