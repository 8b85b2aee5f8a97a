"""Every rank holds the whole state dict and distributes each tensor. The loop skips a key
missing from the very dict it iterates, a defensive test that never holds: every rank issues
the same broadcasts, whatever the dict holds on each."""
import torch.distributed as dist


def distribute(full_state_dict, local_state_dict):
    for key, value in full_state_dict.items():
        if key not in full_state_dict:
            continue
        dist.broadcast(value, src=0)
        local_state_dict[key] = value


def distribute_in_order(full_state_dict):
    for key in sorted(full_state_dict.keys()):
        if key not in full_state_dict:
            continue
        dist.broadcast(full_state_dict[key], src=0)
