# expect: DSY001 at line 28
"""The tied-embedding sync's helper also answers yes for global rank 0 when it is not in the
embedding group (a leftover of single-stage runs): rank 0 then all-reduces on a group it does
not belong to while the members wait for each other. (With every yes inside the membership
test: quiet/tied_weights_synced_by_group_members.py.)"""
import torch
import torch.distributed as dist


class TiedEmbeddingSync:
    def __init__(self, model, embedding_group, is_first_stage, is_last_stage):
        self.model = model
        self.embedding_group = embedding_group
        self.is_first_stage = is_first_stage
        self.is_last_stage = is_last_stage

    def _holds_tied_copy(self):
        if self.embedding_group is None:
            return False
        ranks = dist.get_process_group_ranks(self.embedding_group)
        if dist.get_rank() in ranks:
            if dist.get_rank() == ranks[0]:
                return self.is_first_stage
            return self.is_last_stage
        return dist.get_rank() == 0

    def sync(self):
        if self._holds_tied_copy():
            weight = self.model.shared_weight()
            dist.all_reduce(weight.data, group=self.embedding_group)
            weight.data /= 2
