"""Topic classifier trained with Accelerate: `accelerate launch --cpu train.py`."""

from datetime import timedelta

import torch
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.utils import ProjectConfiguration, set_seed
from torch.utils.data import DataLoader

from config import parse_args
from textcls import checkpointing
from textcls.data import TopicDocs
from textcls.engine import evaluate, train_one_epoch
from textcls.model import BagOfTokens


def main():
    cfg = parse_args()
    accelerator = Accelerator(
        cpu=True,
        project_config=ProjectConfiguration(project_dir=cfg.project_dir,
                                            automatic_checkpoint_naming=True, total_limit=2),
        kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=cfg.dist_timeout_s))],
    )
    set_seed(cfg.seed)
    train_set = TopicDocs(cfg.train_docs, cfg.vocab, cfg.seq_len, cfg.classes, cfg.seed)
    eval_set = TopicDocs(cfg.eval_docs, cfg.vocab, cfg.seq_len, cfg.classes, cfg.seed + 1)
    model = BagOfTokens(cfg.vocab, cfg.embed_dim, cfg.classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9)
    train_loader = DataLoader(train_set, batch_size=cfg.batch_size, shuffle=True)
    eval_loader = DataLoader(eval_set, batch_size=cfg.batch_size)
    model, optimizer, train_loader, eval_loader = accelerator.prepare(
        model, optimizer, train_loader, eval_loader)

    for epoch in range(cfg.epochs):
        train_one_epoch(accelerator, model, optimizer, train_loader, epoch)
        accuracy, seen = evaluate(accelerator, model, eval_loader)
        accelerator.print(f"epoch {epoch}: eval accuracy {accuracy:.3f} on {seen} documents")
        checkpointing.save(accelerator, epoch)
    accelerator.wait_for_everyone()
    accelerator.print("done")
    accelerator.end_training()


if __name__ == "__main__":
    main()
