"""torchrun --nproc-per-node 4 train.py --epochs 2"""

from transformers import set_seed

from config import parse
from pipeline.run import build_trainer


def main():
    s = parse()
    set_seed(s.seed)
    trainer = build_trainer(s)
    out = trainer.train()
    final = trainer.evaluate()
    trainer.save_model(s.output_dir)
    if trainer.is_world_process_zero():
        print(f"finished: {out.global_step} steps, final eval loss {final['eval_loss']:.3f}", flush=True)


if __name__ == "__main__":
    main()
