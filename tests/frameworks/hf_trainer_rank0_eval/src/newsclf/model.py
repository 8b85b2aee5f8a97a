"""DistilBERT-shaped topic classifier built from a config."""

import numpy as np
from transformers import DistilBertConfig, DistilBertForSequenceClassification


def topic_classifier(vocab_size: int, seq_len: int, num_topics: int):
    config = DistilBertConfig(vocab_size=vocab_size, max_position_embeddings=seq_len, dim=32,
                              n_layers=2, n_heads=2, hidden_dim=64, num_labels=num_topics)
    return DistilBertForSequenceClassification(config)


def accuracy(eval_pred):
    logits, labels = eval_pred
    return {"accuracy": float((np.argmax(logits, axis=-1) == labels).mean())}
