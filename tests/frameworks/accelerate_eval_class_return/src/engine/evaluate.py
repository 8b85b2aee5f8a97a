import torch

from engine.metrics import per_class_recall
from wafers.data import CLASSES


@torch.no_grad()
def evaluate(accelerator, model, loader) -> dict:
    model.eval()
    preds, labels = [], []
    for wafers, target in loader:
        preds.append(model(wafers).argmax(dim=-1))
        labels.append(target)
    preds, labels = torch.cat(preds), torch.cat(labels)
    counts = torch.bincount(labels, minlength=len(CLASSES)).tolist()
    print(f"process {accelerator.process_index}: holdout shard of {len(labels)} wafers, "
          f"per class {counts}", flush=True)
    return per_class_recall(accelerator, preds, labels, CLASSES)
