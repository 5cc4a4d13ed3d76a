"""Small models of the families people train, each written the usual way in plain torch.nn:
what fused mode's savings are measured on (benchmarks/fused_models.py) beside the demo's
decoder, and what tests/python/test_fused_zoo.py counts saved bytes on.

Every model's ``forward(*inputs)`` returns its output and ``forward(*inputs, targets=t)`` its
loss; ``ZOO[name].batch(generator)`` makes ``(inputs, targets)`` on CPU from a seed."""

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .llama import Llama, LlamaConfig
from .train import make_batch as llama_batch

VOCAB, DIM, LAYERS, HEADS, BATCH, SEQ = 256, 128, 2, 4, 8, 64


class SelfAttention(nn.Module):
    """Fused QKV projection and scaled_dot_product_attention, as GPT-2, BERT and ViT write it."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, causal=False, mask=None):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc = nn.Linear(dim, hidden)
        self.out = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.out(F.gelu(self.fc(x)))


class PreNormBlock(nn.Module):
    """GPT-2's and ViT's block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, dim: int, heads: int, causal: bool):
        super().__init__()
        self.causal = causal
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn, self.mlp = SelfAttention(dim, heads), Mlp(dim, 4 * dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x), causal=self.causal)
        return x + self.mlp(self.ln2(x))


class Gpt2(nn.Module):
    """Learned positions, pre-norm blocks, final LayerNorm, LM head tied to the embedding."""

    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, DIM), nn.Embedding(SEQ, DIM)
        self.blocks = nn.ModuleList(PreNormBlock(DIM, HEADS, causal=True) for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight
        _embedding_init(self)

    def forward(self, tokens, targets=None):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def _embedding_init(model):
    # As GPT-2 and BERT initialise them: N(0, 0.02) (PyTorch's N(0, 1) gives a tied LM head
    # logits in the tens).
    for module in model.modules():
        if isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)


class PostNormBlock(nn.Module):
    """BERT's block: ln(x + attn(x)), then ln(x + mlp(x)), attention masked at padding."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.attn, self.mlp = SelfAttention(dim, heads), Mlp(dim, 4 * dim)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, x, mask):
        x = self.ln1(x + self.attn(x, mask=mask))
        return self.ln2(x + self.mlp(x))


class Bert(nn.Module):
    """Post-norm encoder with token-type embeddings and a masked-LM head (dense, GELU,
    LayerNorm, decoder tied to the embedding); the loss counts masked positions only."""

    def __init__(self):
        super().__init__()
        self.words, self.positions = nn.Embedding(VOCAB, DIM), nn.Embedding(SEQ, DIM)
        self.types = nn.Embedding(2, DIM)
        self.ln_embed = nn.LayerNorm(DIM)
        self.blocks = nn.ModuleList(PostNormBlock(DIM, HEADS) for _ in range(LAYERS))
        self.dense, self.ln_head = nn.Linear(DIM, DIM), nn.LayerNorm(DIM)
        self.decoder = nn.Linear(DIM, VOCAB)
        self.decoder.weight = self.words.weight
        _embedding_init(self)

    def forward(self, tokens, token_types, padding, targets=None):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.ln_embed(self.words(tokens) + self.positions(positions) + self.types(token_types))
        mask = ~padding[:, None, None, :]  # attend to every token that is not padding
        for block in self.blocks:
            x = block(x, mask)
        logits = self.decoder(self.ln_head(F.gelu(self.dense(x))))
        if targets is None:
            return logits
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)


class Vit(nn.Module):
    """4x4 patches by a strided convolution, a class token, learned positions, pre-norm
    blocks, a linear head on the class token."""

    def __init__(self, image: int = 32, patch: int = 4, classes: int = 10):
        super().__init__()
        self.patches = nn.Conv2d(3, DIM, kernel_size=patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, DIM))
        self.positions = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, DIM) * 0.02)
        self.blocks = nn.ModuleList(PreNormBlock(DIM, HEADS, causal=False) for _ in range(LAYERS))
        self.ln = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, classes)

    def forward(self, images, targets=None):
        x = self.patches(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.positions
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x[:, 0]))
        return logits if targets is None else F.cross_entropy(logits, targets)


class Cnn(nn.Module):
    """Two stages of (conv, batch norm, ReLU) x 2 then max pooling, global average pooling, a
    linear classifier."""

    def __init__(self, classes: int = 10):
        super().__init__()
        layers, channels = [], 3
        for width in (32, 64):
            for _ in range(2):
                layers += [nn.Conv2d(channels, width, 3, padding=1, bias=False),
                           nn.BatchNorm2d(width), nn.ReLU(inplace=True)]
                channels = width
            layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(channels, classes)

    def forward(self, images, targets=None):
        logits = self.classifier(F.adaptive_avg_pool2d(self.features(images), 1).flatten(1))
        return logits if targets is None else F.cross_entropy(logits, targets)


class LstmLm(nn.Module):
    """Embedding, a two-layer nn.LSTM, a linear decoder over the vocabulary."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.lstm = nn.LSTM(DIM, 2 * DIM, num_layers=2, batch_first=True)
        self.decoder = nn.Linear(2 * DIM, VOCAB)

    def forward(self, tokens, targets=None):
        logits = self.decoder(self.lstm(self.embed(tokens))[0])
        if targets is None:
            return logits
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


class Demo(Llama):
    """The demo's decoder with the zoo's calling convention."""

    def __init__(self):
        super().__init__(LlamaConfig())

    def forward(self, tokens, targets=None):
        out = super().forward(tokens, targets)
        return out if targets is None else out[1]


def _tokens(generator):
    return llama_batch(generator, LlamaConfig(vocab_size=VOCAB), BATCH, SEQ)


def _lm_batch(generator):
    inputs, targets = _tokens(generator)
    return (inputs,), targets


def _masked_lm_batch(generator):
    tokens = torch.randint(1, VOCAB, (BATCH, SEQ), generator=generator)
    lengths = torch.randint(SEQ // 2, SEQ + 1, (BATCH,), generator=generator)
    padding = torch.arange(SEQ)[None, :] >= lengths[:, None]
    masked = (torch.rand(BATCH, SEQ, generator=generator) < 0.15) & ~padding
    targets = torch.where(masked, tokens, -100)
    inputs = torch.where(masked, 0, tokens).masked_fill(padding, 0)  # 0: [MASK] and [PAD]
    types = (torch.arange(SEQ)[None, :] >= lengths[:, None] // 2).long()
    return (inputs, types, padding), targets


def _image_batch(generator, batch=32):
    images = torch.randn(batch, 3, 32, 32, generator=generator)
    return (images,), torch.randint(0, 10, (batch,), generator=generator)


@dataclass(frozen=True)
class Entry:
    build: Callable[[], nn.Module]
    batch: Callable[[torch.Generator], tuple]  # -> (inputs tuple, targets)
    unit: str                                  # what a batch's throughput counts
    units_per_batch: int


ZOO = {
    "demo": Entry(Demo, _lm_batch, "tokens", BATCH * SEQ),
    "gpt2": Entry(Gpt2, _lm_batch, "tokens", BATCH * SEQ),
    "bert": Entry(Bert, _masked_lm_batch, "tokens", BATCH * SEQ),
    "vit": Entry(Vit, _image_batch, "images", 32),
    "cnn": Entry(Cnn, _image_batch, "images", 32),
    "lstm": Entry(LstmLm, _lm_batch, "tokens", BATCH * SEQ),
}
