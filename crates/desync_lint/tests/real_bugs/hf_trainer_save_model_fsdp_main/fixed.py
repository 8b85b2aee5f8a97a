"""LoRA fine-tuning with the Hugging Face Trainer on two nodes, DDP or FSDP.

Every rank calls `Trainer.save_model` (the Trainer writes from the main process itself);
only the tokenizer files are written under the main-process guard.
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
    trainer.save_model(args.output_dir)
    if is_main:
        tokenizer.save_pretrained(args.output_dir)
    if dist.is_initialized():
        dist.destroy_process_group()
