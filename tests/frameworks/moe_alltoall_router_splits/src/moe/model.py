import torch
from torch import nn

from moe.layer import MoELayer


class MoELM(nn.Module):
    """Embedding -> attention -> MoE feed-forward -> tied output head."""

    def __init__(self, cfg, num_experts: int, expert_seed: int):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos = nn.Embedding(cfg.seq_len, cfg.d_model)
        self.attn = nn.MultiheadAttention(cfg.d_model, 2, batch_first=True)
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.moe = MoELayer(cfg.d_model, cfg.d_ff, num_experts, cfg.capacity_factor, expert_seed)

    def dense_parameters(self):
        """Parameters replicated on every rank (everything but this rank's expert)."""
        return [p for name, p in self.named_parameters() if not name.startswith("moe.expert.")]

    def forward(self, tokens, mask):
        width = tokens.shape[1]
        h = self.tok(tokens) + self.pos(torch.arange(width))
        causal = nn.Transformer.generate_square_subsequent_mask(width)
        a, _ = self.attn(self.norm1(h), self.norm1(h), self.norm1(h), attn_mask=causal,
                         need_weights=False)
        h = h + a
        h = h + self.moe(self.norm2(h), mask)
        return h @ self.tok.weight.T
