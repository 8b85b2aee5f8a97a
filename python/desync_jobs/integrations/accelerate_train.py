"""The regression trained with Accelerate under torchrun on CPU (Gloo), with desync attached.

    torchrun --nproc-per-node 2 accelerate_train.py --stall-rank 1
"""

import datetime

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs
from regression import build_model, parser, shard_store

import desync.accelerate


def main():
    p = parser(__doc__)
    p.add_argument("--dump-dir", default="desync-dumps")
    args = p.parse_args()
    desync.accelerate.enable(args.dump_dir)  # before Accelerator() starts the process group
    accelerator = Accelerator(
        cpu=True,
        kwargs_handlers=[InitProcessGroupKwargs(
            backend="gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))],
    )
    desync.accelerate.attach(accelerator)
    model = build_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    model, optimizer = accelerator.prepare(model, optimizer)
    shards = shard_store(args)
    rank = accelerator.process_index
    for step in range(1, args.steps + 1):
        x, y = shards.read(rank, step)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        accelerator.backward(loss)  # DDP's gradient all_reduce
        optimizer.step()
        accelerator.print(f"step {step}: loss {loss.item():.4f}")
    accelerator.wait_for_everyone()
    accelerator.end_training()


if __name__ == "__main__":
    main()
