# expect: DSY001 at line 27
# expect: DSY001 at line 29
# expect: DSY001 at line 41
"""The same writer as quiet/savers_and_non_savers_pair_their_barriers.py, but with pipeline
stages a stage's non-master leaves without the barrier: the non-savers' barrier then waits
for ranks that never arrive (and the stage masters' barrier for the non-masters)."""
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
                return
            dist.barrier()
