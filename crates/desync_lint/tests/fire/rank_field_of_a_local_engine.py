# expect: DSY001 at line 25
"""An engine built in the function with the rank, then asked a question: nothing in view keeps
the rank out of the answer (the object is the function's own value, not a field of another),
so only the ranks whose engine says yes issue the all_reduce. (A held engine whose rank
reached one field only: quiet/method_of_an_engine_built_with_the_rank.py.)"""
import torch.distributed as dist


class AsyncEngine:
    def __init__(self, config, rank):
        self.config = config
        self.rank = rank

    def is_decoupled(self):
        return self.config.get("decoupled", self.rank % 2 == 0)


def create_engine(config):
    return AsyncEngine(config, rank=dist.get_rank())


def save(model, config, flag):
    engine = create_engine(config)
    state = model.state_dict()
    if engine.is_decoupled():
        dist.all_reduce(flag)
    return state
