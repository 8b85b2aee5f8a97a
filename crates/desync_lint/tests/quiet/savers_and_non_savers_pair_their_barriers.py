"""Checkpoint writer of a hybrid-parallel job. Ranks that hold no shard to save (data-parallel
rank != 0) wait in one barrier and leave; the savers gather their tensor-parallel shards (on
the tensor-parallel group, whose members share the data-parallel rank and so all stay) and
then reach exactly one barrier on every path: after writing the shards, or, with pipeline
stages, after writing their stage's index (or at once, for a stage's non-master). (A saver
path without its barrier fires: fire/saver_path_without_barrier.py.)"""
import torch
import torch.distributed as dist


class ShardedSaver:
    def __init__(self, dp_group, tp_group, pp_size):
        self.dp_rank = dist.get_rank(dp_group)
        self.tp_group = tp_group
        self.tp_rank = dist.get_rank(tp_group)
        self.pp_size = pp_size

    def gather_shards(self, tensors):
        out = []
        for t in tensors:
            parts = [torch.empty_like(t) for _ in range(dist.get_world_size(self.tp_group))]
            dist.all_gather(parts, t, group=self.tp_group)
            out.append(torch.cat(parts))
        return out

    def save(self, tensors, path):
        if self.dp_rank != 0:
            dist.barrier()
            return
        shards = self.gather_shards(tensors)
        is_master = self.tp_rank == 0
        if self.pp_size == 1:
            if is_master:
                torch.save(shards, path)
            dist.barrier()
        else:
            torch.save(shards, f"{path}.stage")
            if is_master:
                torch.save({"index": len(shards)}, f"{path}.index")
            else:
                dist.barrier()
                return
            dist.barrier()
