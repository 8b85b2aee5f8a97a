"""Checkpoints under <project_dir>/checkpoints/checkpoint_<n> (Accelerate's naming)."""


def save(accelerator, epoch):
    # Every process takes part: save_state synchronises the processes itself.
    accelerator.save_state()
    accelerator.print(f"epoch {epoch}: saved checkpoint {accelerator.save_iteration - 1}")
