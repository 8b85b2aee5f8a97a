"""The checkpoint writer is built with the rank (to name its shard files) and with how often
to write, a setting every rank reads from the same config; `due()` answers from the setting
alone, so every rank takes the same branch and the barrier under it is issued everywhere.
(A method answering from the rank field: fire/rank_field_read_by_a_method_of_a_local_engine.py.)"""
import torch
import torch.distributed as dist


class ShardWriter:
    def __init__(self, folder, rank, every):
        self.folder = folder
        self.rank = rank
        self.every = every

    def due(self, step):
        return step % self.every == 0

    def write(self, state, step):
        torch.save(state, f"{self.folder}/step-{step}-rank{self.rank}.pt")


def train(model, loader, optimizer, config):
    writer = ShardWriter(config["folder"], rank=dist.get_rank(), every=config["every"])
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if writer.due(step):
            writer.write(model.state_dict(), step)
            dist.barrier()
