"""PPO trainer step logging for RLHF, multi-GPU through Accelerate.

Every process gathers its table rows with `gather_object`; the main process builds the
wandb table and logs.
"""
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object


class PPOTrainer:
    def __init__(self, config, model, ref_model, tokenizer):
        self.config = config
        self.accelerator = Accelerator(log_with=config.log_with)
        self.model, self.ref_model, self.tokenizer = model, ref_model, tokenizer
        self.current_step = 0

    def step(self, queries, responses, scores):
        stats = self.train_minibatches(queries, responses, scores)
        self.current_step += 1
        return stats

    def log_stats(self, stats, batch, rewards, columns_to_log=("query", "response")):
        if not isinstance(rewards, torch.Tensor):
            rewards = torch.tensor(rewards).to(self.accelerator.device)
        table_rows = None
        if self.config.log_with == "wandb":
            table_rows = [list(r) for r in zip(*[batch[c] for c in columns_to_log], rewards.cpu().tolist())]
            table_rows = gather_object(table_rows)
        if self.accelerator.is_main_process:
            logs = {}
            if table_rows is not None:
                import wandb

                logs["game_log"] = wandb.Table(columns=[*columns_to_log, "reward"], rows=table_rows)
            logs.update(stats)
            logs["env/reward_mean"] = torch.mean(rewards).cpu().item()
            self.accelerator.log(logs, step=self.current_step)

    def train_minibatches(self, queries, responses, scores):
        raise NotImplementedError
