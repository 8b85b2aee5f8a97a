"""Exports a full (unsharded) copy of the weights for the serving team."""

import os

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict


def export_for_serving(model, path: str, step: int) -> None:
    if dist.get_rank() == 0:
        state = get_model_state_dict(
            model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.save(state, path)
        print(f"step {step}: exported {len(state)} tensors to {path}", flush=True)
