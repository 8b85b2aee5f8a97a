"""torchrun --nproc-per-node 4 train.py"""

from transformers import TrainingArguments, set_seed

from config import load
from reviews.data import ReviewDataset, load_reviews
from reviews.model import build_model
from training.callbacks import NonFiniteLossGuard
from training.trainer import HelpfulnessTrainer, LossWatch


def main():
    cfg = load()
    set_seed(cfg.seed)
    train_rows = load_reviews(cfg.train_reviews, cfg.vocab_size, cfg.max_length, cfg.seed)
    eval_rows = load_reviews(cfg.eval_reviews, cfg.vocab_size, cfg.max_length, cfg.seed + 1,
                             first_row=cfg.train_reviews)
    args = TrainingArguments(
        output_dir=cfg.output_dir,
        use_cpu=True,
        ddp_backend="gloo",
        ddp_timeout=cfg.dist_timeout_s,
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.batch_size,
        num_train_epochs=cfg.epochs,
        learning_rate=cfg.lr,
        train_sampling_strategy="sequential",  # rows are ordered by review date
        eval_strategy="steps",
        eval_steps=cfg.eval_steps,
        logging_steps=cfg.logging_steps,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=cfg.seed,
    )
    watch = LossWatch()
    trainer = HelpfulnessTrainer(
        model=build_model(cfg.vocab_size, cfg.max_length),
        args=args,
        train_dataset=ReviewDataset(train_rows, cfg.max_length),
        eval_dataset=ReviewDataset(eval_rows, cfg.max_length),
        callbacks=[NonFiniteLossGuard(watch, cfg.nonfinite_patience)],
        loss_watch=watch,
    )
    result = trainer.train()
    metrics = trainer.evaluate()
    if trainer.is_world_process_zero():
        print(f"trained {result.global_step} steps, eval loss {metrics['eval_loss']:.4f}", flush=True)
    trainer.save_model(cfg.output_dir)


if __name__ == "__main__":
    main()
