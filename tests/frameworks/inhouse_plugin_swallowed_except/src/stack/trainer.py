"""The training loop: DDP, AdamW, hooks every `hooks.every` steps."""

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from stack.dispatch import Dispatcher


@dataclass
class StepState:
    rank: int
    step: int = 0
    loss: float = float("nan")
    window: list = field(default_factory=list)  # (score, label) since the last hook round


def fit(model, loader, cfg, rank: int) -> StepState:
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=cfg.model.lr)
    hooks = Dispatcher(cfg.hooks.plugins)
    state = StepState(rank)
    for step, (x, y) in enumerate(loader, start=1):
        state.step = step
        logits = ddp(x)
        loss = F.binary_cross_entropy_with_logits(logits, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        state.loss = loss.item()
        state.window.extend(zip(torch.sigmoid(logits).tolist(), y.tolist()))
        if step % cfg.hooks.every == 0:
            hooks.fire("after_steps", state)
            state.window.clear()
    return state
