"""A small BERT regressor built from a config (no pretrained weights on the cluster)."""

from transformers import BertConfig, BertForSequenceClassification


def build_model(vocab_size: int, max_length: int):
    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=max_length,
        num_labels=1,
        problem_type="regression",
    )
    return BertForSequenceClassification(config)
