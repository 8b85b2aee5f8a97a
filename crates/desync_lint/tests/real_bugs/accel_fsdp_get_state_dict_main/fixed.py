"""CT/text contrastive model trainer on Accelerate with an FSDP plugin.

Every process calls `accelerator.get_state_dict` (an FSDP gather) at the save step; the
main process alone writes the file.
"""
from pathlib import Path

from accelerate import Accelerator
from accelerate.utils import FullyShardedDataParallelPlugin


class CTClipTrainer:
    def __init__(self, model, dataloader, optimizer, results_folder, save_model_every=1000, use_fsdp=True):
        self.accelerator = Accelerator(fsdp_plugin=FullyShardedDataParallelPlugin() if use_fsdp else None)
        self.model, self.optimizer, self.dl = self.accelerator.prepare(model, optimizer, dataloader)
        self.results_folder = Path(results_folder)
        self.save_model_every = save_model_every
        self.steps = 0

    @property
    def is_main(self):
        return self.accelerator.is_main_process

    def train_step(self):
        text, video = next(self.dl_iter)
        loss = self.model(text, video, return_loss=True)
        self.accelerator.backward(loss)
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.accelerator.print(f"{self.steps}: loss {loss.item():.4f}")

        if not (self.steps % self.save_model_every):
            state_dict = self.accelerator.get_state_dict(self.model, unwrap=False)
            if self.is_main:
                model_path = str(self.results_folder / f"CTClip.{self.steps}.pt")
                self.accelerator.save(state_dict, model_path)
        self.steps += 1

    def train(self, num_train_steps):
        self.dl_iter = iter(self.dl)
        while self.steps < num_train_steps:
            self.train_step()
