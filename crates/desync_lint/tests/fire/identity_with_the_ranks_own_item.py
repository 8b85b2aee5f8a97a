# expect: DSY001 at line 23
"""Each rank owns one parameter and skips its reduction, believing the owner's copy to be
authoritative; the others all_reduce it. Whether `p` is the rank's own item differs from rank
to rank (the item is picked by the rank), so in every iteration one rank is missing from
the collective. (An identity test against an object every rank holds alike is quiet:
quiet/identity_test_in_an_inherited_method.py.)"""
import torch.distributed as dist


class ShardOwner:
    def __init__(self, params, group):
        self.group = group
        self.rank = dist.get_rank(group)
        self.params = params
        self.mine = params[self.rank]

    def _owned(self, p):
        return p is self.mine

    def reduce(self):
        for p in self.params:
            if self._owned(p):
                continue
            dist.all_reduce(p.grad, group=self.group)
