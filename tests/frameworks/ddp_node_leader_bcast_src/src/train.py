"""torchrun --nnodes 2 --nproc-per-node 2 train.py"""

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from config import parse
from data.labels import shared_label_map
from data.utterances import loader
from engine.loop import fit
from launch.topology import setup


class IntentModel(nn.Module):
    def __init__(self, vocab: int, embed: int, classes: int):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, embed)
        self.head = nn.Linear(embed, classes)

    def forward(self, tokens):
        return self.head(self.embed(tokens))


def main():
    cfg = parse()
    topo = setup(cfg.dist_timeout_s)
    torch.manual_seed(cfg.seed)
    labels = shared_label_map(topo)
    print(f"rank {topo.rank}: label map {labels['version']}", flush=True)
    classes = len(labels["intents"])
    model = DistributedDataParallel(IntentModel(cfg.vocab_size, cfg.embed, classes))
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    data = loader(cfg.utterances_per_rank, cfg.vocab_size, classes, cfg.batch_size,
                  cfg.seed + topo.rank)
    fit(model, optimizer, data, cfg.epochs, topo.rank)


if __name__ == "__main__":
    main()
