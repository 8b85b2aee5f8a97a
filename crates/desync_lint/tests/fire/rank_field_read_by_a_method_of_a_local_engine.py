# expect: DSY001 at line 35
# expect: DSY001 at line 46
"""The checkpoint writer is built with the rank, and `leads()` answers from that field: only
rank 0 reaches the barrier under it (its peers wait in it forever, or in the next collective).
`should_flush()` asks `leads()` through its own object, so the same holds one method further.
(A method reading a field built alike on every rank:
quiet/setting_read_by_a_method_of_a_local_engine.py.)"""
import torch
import torch.distributed as dist


class CheckpointWriter:
    def __init__(self, folder, rank, every=100):
        self.folder = folder
        self.rank = rank
        self.every = every

    def leads(self):
        return self.rank == 0

    def should_flush(self, step):
        return self.leads() and step % self.every == 0

    def write(self, state, step):
        torch.save(state, f"{self.folder}/step-{step}.pt")


def train(model, loader, optimizer, folder):
    writer = CheckpointWriter(folder, dist.get_rank())
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if writer.leads():
            writer.write(model.state_dict(), step)
            dist.barrier()


def finetune(model, loader, optimizer, folder):
    writer = CheckpointWriter(folder, rank=dist.get_rank(), every=10)
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        if writer.should_flush(step):
            writer.write(model.state_dict(), step)
            dist.barrier()
