"""torchrun --nproc-per-node 4 train.py --epochs 2"""

from transformers import Trainer, TrainingArguments, set_seed

from callbacks.ood_eval import OutOfDomainEval
from callbacks.progress import EpochProgress
from newsclf.data import TopicDataset, articles
from newsclf.model import accuracy, topic_classifier
from settings import from_cli


def main():
    exp = from_cli()
    set_seed(exp.seed)
    make = lambda n, seed, register=0: TopicDataset(  # noqa: E731
        articles(n, exp.num_topics, exp.vocab_size, exp.seq_len, seed, register), exp.seq_len)
    ood = OutOfDomainEval(make(exp.ood_articles, exp.seed + 2, register=1))
    args = TrainingArguments(
        output_dir=exp.output_dir,
        use_cpu=True,
        ddp_backend="gloo",
        ddp_timeout=exp.dist_timeout_s,
        per_device_train_batch_size=exp.batch_size,
        per_device_eval_batch_size=exp.batch_size,
        num_train_epochs=exp.epochs,
        learning_rate=exp.lr,
        eval_strategy="steps",
        eval_steps=exp.eval_steps,
        logging_steps=exp.logging_steps,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        seed=exp.seed,
    )
    trainer = Trainer(
        model=topic_classifier(exp.vocab_size, exp.seq_len, exp.num_topics),
        args=args,
        train_dataset=make(exp.train_articles, exp.seed),
        eval_dataset=make(exp.eval_articles, exp.seed + 1),
        compute_metrics=accuracy,
        callbacks=[ood, EpochProgress()],
    )
    ood.attach(trainer)
    trainer.train()
    if trainer.is_world_process_zero():
        print(f"ood history: {ood.history}", flush=True)


if __name__ == "__main__":
    main()
