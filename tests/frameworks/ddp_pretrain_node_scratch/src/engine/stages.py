import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from engine.checkpoint import load_encoder, save_encoder
from sensors.model import Autoencoder, FaultClassifier
from sensors.windows import loader


def pretrain(cfg, rank: int) -> None:
    inputs = cfg.channels * cfg.window
    model = DistributedDataParallel(Autoencoder(inputs, cfg.hidden, cfg.code))
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.pretrain_epochs):
        for x, _ in loader(rank, cfg):
            loss = F.mse_loss(model(x), x)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        print(f"rank {rank}: pretrain epoch {epoch} reconstruction loss {loss.item():.4f}",
              flush=True)
    save_encoder(model.module.encoder, cfg.encoder_path)


def finetune(cfg, rank: int) -> float:
    inputs = cfg.channels * cfg.window
    classifier = FaultClassifier(inputs, cfg.hidden, cfg.code, cfg.faults)
    load_encoder(classifier.encoder, cfg.encoder_path)
    model = DistributedDataParallel(classifier)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.finetune_epochs):
        correct, seen = torch.zeros(2), 0
        for x, faults in loader(rank, cfg):
            logits = model(x)
            loss = F.cross_entropy(logits, faults)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            correct[0] += (logits.argmax(-1) == faults).sum()
            seen += len(faults)
        correct[1] = seen
        dist.all_reduce(correct)
        print(f"rank {rank}: fine-tune epoch {epoch} accuracy {correct[0] / correct[1]:.3f}",
              flush=True)
    return float(correct[0] / correct[1])
