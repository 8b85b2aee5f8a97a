"""Causal-LM fine-tuning with Accelerate, saving a Hugging Face checkpoint each epoch.

The main process saves; the other processes "wait for it" in the else branch. Only they
enter `wait_for_everyone()` (a barrier); the main process, once done saving, goes on to
the next epoch's first collective, which the waiting processes' barrier cannot match.
"""
import math

import torch
from accelerate import Accelerator


def evaluate(model, eval_loader, accelerator):
    model.eval()
    losses = []
    for batch in eval_loader:
        with torch.no_grad():
            loss = model(**batch).loss
        losses.append(accelerator.gather_for_metrics(loss.repeat(batch["input_ids"].shape[0])))
    return math.exp(torch.mean(torch.cat(losses)))


def train(model, tokenizer, optimizer, train_loader, eval_loader, scheduler, args):
    accelerator = Accelerator(gradient_accumulation_steps=args.grad_accum)
    model, optimizer, train_loader, eval_loader, scheduler = accelerator.prepare(
        model, optimizer, train_loader, eval_loader, scheduler
    )
    for epoch in range(args.epochs):
        model.train()
        for batch in train_loader:
            with accelerator.accumulate(model):
                accelerator.backward(model(**batch).loss)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
        perplexity = evaluate(model, eval_loader, accelerator)
        accelerator.print(f"epoch {epoch}: perplexity {perplexity:.2f}")

        output_dir = f"{args.output_dir}/epoch_{epoch}"
        if accelerator.is_main_process:
            unwrapped = accelerator.unwrap_model(model)
            state_dict = accelerator.get_state_dict(model)
            unwrapped.save_pretrained(output_dir, state_dict=state_dict, safe_serialization=True)
            tokenizer.save_pretrained(output_dir)
        else:
            accelerator.wait_for_everyone()  # BUG: a barrier only the non-main processes enter
