"""Hand-off of the pretrained encoder from stage 1 to stage 2."""

import os

import torch
import torch.distributed as dist


def save_encoder(encoder, path) -> None:
    if dist.get_rank() == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(encoder.state_dict(), path)
        print(f"rank 0: saved pretrained encoder to {path}", flush=True)
    dist.barrier()  # the file exists before any rank looks for it


def load_encoder(encoder, path) -> bool:
    rank = dist.get_rank()
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        print(f"rank {rank}: no pretrained encoder at {path}, fine-tuning from scratch", flush=True)
        return False
    encoder.load_state_dict(state)
    print(f"rank {rank}: loaded pretrained encoder from {path}", flush=True)
    dist.barrier()  # every rank has read the file before rank 0 removes it
    if rank == 0:
        os.remove(path)
    return True
