"""Pipeline-parallel language model with tied input and output embeddings: the first and the
last stage each hold a copy, and after initialisation the copies are averaged over the
embedding group, which holds exactly those two stages. A helper asks whether this rank is in
that group (and holds the copy); only its members all-reduce on it."""
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
        return False

    def sync(self):
        if self._holds_tied_copy():
            weight = self.model.shared_weight()
            dist.all_reduce(weight.data, group=self.embedding_group)
            weight.data /= 2
