"""Text-to-image LoRA fine-tuning (diffusers-style script) with Accelerate + DeepSpeed.

Every process calls `accelerator.save_state()` at the checkpoint step; Accelerate and
DeepSpeed decide which rank writes which file.
"""
import os

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import ProjectConfiguration


def train(unet, noise_scheduler, text_encoder, vae, optimizer, lr_scheduler, train_dataloader, args):
    accelerator = Accelerator(
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        mixed_precision=args.mixed_precision,
        project_config=ProjectConfiguration(project_dir=args.output_dir),
    )
    unet, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(unet, optimizer, train_dataloader, lr_scheduler)
    global_step = 0
    for epoch in range(args.num_train_epochs):
        unet.train()
        for batch in train_dataloader:
            with accelerator.accumulate(unet):
                latents = vae.encode(batch["pixel_values"]).latent_dist.sample() * vae.config.scaling_factor
                noise = torch.randn_like(latents)
                timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (latents.shape[0],), device=latents.device)
                noisy = noise_scheduler.add_noise(latents, noise, timesteps)
                pred = unet(noisy, timesteps, text_encoder(batch["input_ids"])[0]).sample
                loss = F.mse_loss(pred.float(), noise.float())
                accelerator.backward(loss)
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()

            if accelerator.sync_gradients:
                global_step += 1
                if global_step % args.checkpointing_steps == 0:
                    save_path = os.path.join(args.output_dir, f"checkpoint-{global_step}")
                    accelerator.save_state(save_path)
            if global_step >= args.max_train_steps:
                break
    accelerator.end_training()
