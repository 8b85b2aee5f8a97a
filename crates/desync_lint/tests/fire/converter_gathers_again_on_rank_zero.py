# expect: DSY001 at line 39
"""The converter gathers the full state dict itself when it is given none, and rank 0 calls
it without one: rank 0 alone enters the gather, and the others wait in the barrier below.
(Given the state dict every rank gathered, it is quiet:
quiet/converter_given_the_gathered_state_dict.py.)"""
import json
import os

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict


def convert_to_hf(model, output_dir, state_dict=None, dtype=torch.bfloat16):
    if state_dict is None:
        state_dict = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    converted = {}
    for name, tensor in state_dict.items():
        converted[name.replace("blocks.", "model.layers.")] = tensor.to(dtype)
    os.makedirs(output_dir, exist_ok=True)
    torch.save(converted, os.path.join(output_dir, "pytorch_model.bin"))
    with open(os.path.join(output_dir, "config.json"), "w") as f:
        json.dump({"dtype": str(dtype)}, f)


class ExportCallback:
    def __init__(self, output_dir, cached=None):
        self.output_dir = output_dir
        self.cached = cached

    def _cached_state_dict(self):
        if self.cached is None:
            return None
        return self.cached

    def on_train_end(self, model):
        # What the cache holds may be None: the converter then gathers on rank 0 alone.
        state_dict = self._cached_state_dict()
        if dist.get_rank() == 0:
            convert_to_hf(model, self.output_dir, state_dict=state_dict)
        dist.barrier()
