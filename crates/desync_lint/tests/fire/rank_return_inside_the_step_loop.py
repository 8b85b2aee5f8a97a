# expect: DSY001 at line 24
"""A training loop whose rank 0 returns once it has written the final checkpoint, while the
other ranks, not knowing the run is over, go on to the next step and wait in its gradient
all-reduce. Nothing is issued between the test and the `return`, and nothing after the `if`
in the loop body, yet the ranks that stay run more iterations: the lines after the `if` do
not show what they issue."""
import torch
import torch.distributed as dist


def save_final(model, path):
    torch.save(model.state_dict(), path)


def train(model, loader, optimizer, path):
    for step, batch in enumerate(loader):
        loss = model(batch).sum()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        optimizer.step()
        if dist.get_rank() == 0 and step == 100:
            save_final(model, path)
            return
