"""Each data-parallel rank loads its own shard of a ZeRO checkpoint (`shards[dp_rank]`) and
walks its parameter groups; every shard of one checkpoint has the same groups and the same
padded partition sizes, so each rank redistributes the same states in the same order. The
shard a rank picks is its own, but how many groups it holds is read of it, not shown to
differ by the pick. (A loop bound by the rank's own data still fires: fire/while_local_length.py.)"""
import torch
import torch.distributed as dist


class Redistributor:
    def __init__(self, group):
        self.group = group

    def redistribute(self, value):
        out = torch.empty_like(value)
        dist.all_to_all_single(out, value, group=self.group)
        return out

    def convert(self, shard):
        converted = {}
        for i, group in enumerate(shard["param_groups"]):
            size = shard["partitions"][i].numel() + shard["paddings"][i]
            for key, value in group["state"].items():
                if value.numel() == size:
                    converted[(i, key)] = self.redistribute(value)
        return converted

    def load(self, shards):
        dp_rank = dist.get_rank(group=self.group)
        return self.convert(shards[dp_rank])
