"""CIFAR-10 ResNet training with Accelerate and gradient accumulation.

Every process runs the evaluation loop and joins `gather_for_metrics`; the main process
alone prints.
"""
import torch
import torch.nn as nn
from accelerate import Accelerator
from torchvision.models import resnet18

EPOCHS = 50
GRAD_ACCUM = 2


def main(trainloader, testloader):
    accelerator = Accelerator(gradient_accumulation_steps=GRAD_ACCUM)
    model = resnet18(num_classes=10)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    model, optimizer, trainloader, testloader = accelerator.prepare(model, optimizer, trainloader, testloader)

    for epoch in range(EPOCHS):
        model.train()
        for images, labels in trainloader:
            with accelerator.accumulate(model):
                loss = loss_fn(model(images), labels)
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()

        model.eval()
        correct, total = 0, 0
        with torch.no_grad():
            for images, labels in testloader:
                preds = model(images).argmax(dim=1)
                preds, labels = accelerator.gather_for_metrics((preds, labels))
                correct += (preds == labels).sum().item()
                total += labels.numel()
        if accelerator.is_main_process:
            print(f"epoch {epoch}: test accuracy {correct / total:.4f}")
