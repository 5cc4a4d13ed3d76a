"""A small decoder-only transformer in plain torch.nn, shared by the FSDP2, tensor-parallel
and checkpoint workers, and the data they train on.

Attention reshapes with ``view(B, T, -1, head_dim)``, so a tensor-parallel shard of wq/wk/wv
(ColwiseParallel) simply holds fewer heads. VOCAB is odd so that FSDP2's dim-0 shards of
the embedding and the head are uneven (padded) for 2 and 4 ranks.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM, HEADS, HIDDEN, LAYERS, SEQ = 67, 32, 4, 64, 2, 8


class Attention(nn.Module):
    def __init__(self, dim: int = DIM, heads: int = HEADS):
        super().__init__()
        self.head_dim = dim // heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = (w(x).view(b, t, -1, self.head_dim).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(o.transpose(1, 2).reshape(b, t, -1))


class FeedForward(nn.Module):
    def __init__(self, dim: int = DIM, hidden: int = HIDDEN):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden)
        self.w2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.gelu(self.w1(x)))


class Block(nn.Module):
    def __init__(self, dim: int = DIM):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = FeedForward(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Transformer(nn.Module):
    def __init__(self, seed: int, layers: int = LAYERS):
        super().__init__()
        torch.manual_seed(seed)
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.randn(SEQ, DIM) * 0.02)
        self.layers = nn.ModuleList(Block() for _ in range(layers))
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.tok(tokens) + self.pos[: tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def lm_loss(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    logits = model(tokens[:, :-1])
    return F.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))


def token_batch(step: int, rows: int) -> torch.Tensor:
    """The global batch of step ``step``: ``rows`` sequences of SEQ+1 tokens (CPU, seeded)."""
    g = torch.Generator().manual_seed(500 + step)
    return torch.randint(0, VOCAB, (rows, SEQ + 1), generator=g)
