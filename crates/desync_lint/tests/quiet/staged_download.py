"""The staged "rank 0 first" pattern: the other ranks wait, rank 0 downloads, then releases them."""
import torch.distributed as dist


def load_dataset(args):
    if args.local_rank not in [-1, 0]:
        dist.barrier()
    dataset = download(args.data_dir)
    if args.local_rank == 0:
        dist.barrier()
    return dataset


def setup(args):
    if args.local_rank != -1:
        dist.barrier()
    if dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()
