"""Periodic checkpoints (Accelerate names them checkpoint_0, checkpoint_1, ...)."""


def maybe_checkpoint(accelerator, step: int, every: int) -> None:
    if step % every != 0:
        return
    if accelerator.is_main_process:
        # Only the main process writes files.
        accelerator.save_state()
        print(f"step {step}: checkpoint written", flush=True)
