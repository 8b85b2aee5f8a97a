"""Trainer assembly."""

from transformers import Trainer, TrainingArguments

from commitlm.corpus import CommitDataset, synth_messages
from commitlm.model import tiny_gpt2
from pipeline.callbacks import EpochMarker, PerplexityReporter


def training_arguments(s) -> TrainingArguments:
    return TrainingArguments(
        output_dir=s.output_dir,
        use_cpu=True,
        ddp_backend="gloo",
        ddp_timeout=s.dist_timeout_s,
        per_device_train_batch_size=s.batch_size,
        per_device_eval_batch_size=s.batch_size,
        num_train_epochs=s.epochs,
        learning_rate=s.lr,
        warmup_steps=2,
        weight_decay=0.01,
        eval_strategy="steps",
        eval_steps=s.eval_steps,
        logging_steps=s.logging_steps,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        seed=s.seed,
    )


def build_trainer(s) -> Trainer:
    return Trainer(
        model=tiny_gpt2(s.vocab_size, s.context),
        args=training_arguments(s),
        train_dataset=CommitDataset(synth_messages(s.train_messages, s.seed), s.context),
        eval_dataset=CommitDataset(synth_messages(s.eval_messages, s.seed + 100), s.context),
        callbacks=[PerplexityReporter(), EpochMarker()],
    )
