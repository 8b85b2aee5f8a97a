"""The trainer keeps a checkpoint engine that one engine class builds with the rank (to name
its files); whether the engine commits in the background is a constant of its class, chosen
from the job's config. The rank reached one field of the held engine, which does not show
that the method's answer depends on it: indirect evidence, shown with `--include-indirect`
(tests/corpus.rs). A rank test on the engine's own field is direct:
fire/rank_field_of_a_local_engine.py."""
import torch.distributed as dist


class TorchEngine:
    def __init__(self, config):
        self.config = config

    def is_decoupled(self):
        return False


class AsyncEngine:
    def __init__(self, config, rank):
        self.config = config
        self.rank = rank

    def is_decoupled(self):
        return True


def create_engine(config):
    if config.get("async"):
        return AsyncEngine(config, rank=dist.get_rank())
    return TorchEngine(config)


class Trainer:
    def __init__(self, config):
        self.engine = create_engine(config)

    def step(self, model, batch):
        loss = model(batch).mean()
        loss.backward()
        if self.engine.is_decoupled():
            dist.barrier()
        return loss
