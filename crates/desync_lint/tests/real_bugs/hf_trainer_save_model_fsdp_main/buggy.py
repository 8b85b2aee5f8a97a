"""LoRA fine-tuning with the Hugging Face Trainer on two nodes, DDP or FSDP.

After training, the adapter is saved from the main process only. With FSDP the parameters
are sharded, and `Trainer.save_model` gathers the full state dict with collectives that
every rank must join; the non-main rank has already left, and the main rank fails in the
parameter all-gather.
"""
import argparse
import os

import torch.distributed as dist
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="HuggingFaceTB/SmolLM2-135M-Instruct")
    p.add_argument("--strategy", choices=["ddp", "fsdp"], default="ddp")
    p.add_argument("--output_dir", default="out")
    return p.parse_args()


def main(train_dataset):
    args = parse_args()
    is_main = int(os.environ.get("RANK", "0")) == 0
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(args.model), LoraConfig(r=16, target_modules="all-linear"))
    training_args = TrainingArguments(
        output_dir=args.output_dir,
        per_device_train_batch_size=4,
        num_train_epochs=1,
        fsdp="full_shard auto_wrap" if args.strategy == "fsdp" else "",
        ddp_find_unused_parameters=False,
    )
    trainer = Trainer(model=model, args=training_args, train_dataset=train_dataset, processing_class=tokenizer)
    trainer.train()
    if is_main:  # BUG: save_model's state-dict all-gather runs on the main process only
        trainer.save_model(args.output_dir)
        tokenizer.save_pretrained(args.output_dir)
    if dist.is_initialized():
        dist.destroy_process_group()
