"""Diffusion-transformer (DiT) subject-customisation training with Accelerate.

At checkpoint steps the main process logs, creates the directory, and then calls
`accelerator.wait_for_everyone()` to let the others catch up before it unwraps the model.
That barrier is inside the main-process branch, so the other processes never join it and
the main process is stuck there at the first checkpoint.
"""
import os

import torch
from accelerate import Accelerator
from accelerate.logging import get_logger

logger = get_logger(__name__)


def train(dit, optimizer, lr_scheduler, train_dataloader, args):
    accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps, project_dir=args.project_dir)
    dit, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(dit, optimizer, train_dataloader, lr_scheduler)
    global_step = 0
    for epoch in range(args.num_train_epochs):
        for batch in train_dataloader:
            with accelerator.accumulate(dit):
                loss = dit(**batch).loss
                accelerator.backward(loss)
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
            if accelerator.sync_gradients:
                global_step += 1

            if accelerator.sync_gradients and accelerator.is_main_process and global_step % args.checkpointing_steps == 0:  # BUG: the barrier inside runs on the main process only
                logger.info(f"saving checkpoint in {global_step=}")
                save_path = os.path.join(args.project_dir, f"checkpoint-{global_step}")
                os.makedirs(save_path, exist_ok=True)
                accelerator.wait_for_everyone()
                unwrapped = accelerator.unwrap_model(dit)
                trainable = {k for k, v in unwrapped.named_parameters() if v.requires_grad}
                state = {k: v for k, v in unwrapped.state_dict().items() if k in trainable}
                torch.save(state, os.path.join(save_path, "dit_trainable.pt"))
