"""Language-model training loop on a DeepSpeed engine (ZeRO), with periodic checkpoints.

Every rank calls `save_checkpoint`; DeepSpeed decides which rank writes which file.
"""
import argparse

import deepspeed
import deepspeed.comm as dist
import torch


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--save_dir", default="checkpoints")
    parser.add_argument("--save_interval", type=int, default=1000)
    parser.add_argument("--train_iters", type=int, default=100000)
    parser = deepspeed.add_config_arguments(parser)
    return parser.parse_args()


def main(model, dataset):
    args = parse_args()
    deepspeed.init_distributed()
    engine, _, loader, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters(), training_data=dataset)
    data = iter(loader)
    for iteration in range(1, args.train_iters + 1):
        tokens, labels = next(data)
        logits = engine(tokens.to(engine.device))
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.to(engine.device).flatten())
        engine.backward(loss)
        engine.step()
        if iteration % args.save_interval == 0:
            engine.save_checkpoint(args.save_dir, tag=f"iter_{iteration}")
            if dist.get_rank() == 0:
                print(f"saved checkpoint iter_{iteration}")
