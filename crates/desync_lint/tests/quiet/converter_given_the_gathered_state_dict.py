"""Every rank gathers the full state dict; rank 0 alone converts it. The converter gathers
one itself only when it is given none (`if state_dict is None:`), and this call passes the
gathered one: a call that returns a dict is never `None`, so the converter issues nothing
here, and rank 0's conversion pairs with no collective. (Called without the state dict it
gathers on rank 0 alone: fire/converter_gathers_again_on_rank_zero.py.)"""
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
    def __init__(self, output_dir):
        self.output_dir = output_dir

    def _full_state_dict(self, model):
        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        return get_model_state_dict(model, options=options)

    def on_train_end(self, model):
        state_dict = self._full_state_dict(model)
        if dist.get_rank() == 0:
            convert_to_hf(model, self.output_dir, state_dict=state_dict)
        dist.barrier()
