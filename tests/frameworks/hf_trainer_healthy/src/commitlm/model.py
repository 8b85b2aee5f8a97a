"""GPT-2 shaped decoder, small enough for CPU CI."""

from transformers import GPT2Config, GPT2LMHeadModel


def tiny_gpt2(vocab_size: int, context: int) -> GPT2LMHeadModel:
    cfg = GPT2Config(vocab_size=vocab_size, n_positions=context, n_embd=32, n_layer=2, n_head=2,
                     bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return GPT2LMHeadModel(cfg)
