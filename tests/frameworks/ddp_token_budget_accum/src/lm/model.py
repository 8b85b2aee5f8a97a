import torch
from torch import nn


class TinyLM(nn.Module):
    """One pre-norm transformer block with learned positions and a tied output head."""

    def __init__(self, vocab: int, d_model: int, heads: int, max_len: int):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.block = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=2 * d_model,
                                                dropout=0.0, batch_first=True, norm_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        width = tokens.shape[1]
        h = self.tok(tokens) + self.pos(torch.arange(width, device=tokens.device))
        causal = nn.Transformer.generate_square_subsequent_mask(width, device=tokens.device)
        h = self.block(h, src_mask=causal, is_causal=True)
        return self.norm(h) @ self.tok.weight.T
