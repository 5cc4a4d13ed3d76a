"""The demo's training run, shared with the throughput benchmark: random-weight Llama, token
sequences made in the program (a learnable rule plus noise, so the loss visibly falls), AdamW."""

import time
from dataclasses import dataclass, field

import torch

from .llama import Llama, LlamaConfig


@dataclass
class TrainResult:
    device: str
    steps: int
    tokens_per_second: float
    final_loss: float
    losses: list = field(default_factory=list)
    peak_memory_bytes: int = 0


def make_batch(generator: torch.Generator, config: LlamaConfig, batch: int, seq: int):
    """Sequences that follow next = (3 * token + 7) mod V, with 10% random tokens mixed in."""
    start = torch.randint(0, config.vocab_size, (batch, 1), generator=generator)
    steps = torch.arange(seq + 1)
    tokens = start.clone()
    for _ in range(seq):
        tokens = torch.cat([tokens, (3 * tokens[:, -1:] + 7) % config.vocab_size], dim=1)
    noise = torch.randint(0, config.vocab_size, tokens.shape, generator=generator)
    keep = torch.rand(tokens.shape, generator=generator) > 0.1
    tokens = torch.where(keep | (steps == 0), tokens, noise)
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


class TrainingStep:
    """One AdamW training step of the demo model on `device`, over a fixed set of 16 batches:
    `step(k)` trains on batch k mod 16 and returns the loss (read with .item(), a host sync
    every step, as a typical training loop logs)."""

    def __init__(self, device: str, batch: int = 8, seq: int = 64, seed: int = 0,
                 config: LlamaConfig = None):
        config = config or LlamaConfig()
        torch.manual_seed(seed)
        self.device = device
        self.tokens_per_step = batch * seq
        self.model = Llama(config).to(device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=3e-3, weight_decay=0.01)
        data = torch.Generator().manual_seed(seed + 1)
        self.batches = [make_batch(data, config, batch, seq) for _ in range(16)]

    def step(self, k: int) -> float:
        inputs, targets = (t.to(self.device) for t in self.batches[k % len(self.batches)])
        _, loss = self.model(inputs, targets)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return loss.item()


def train(device: str, steps: int, batch: int = 8, seq: int = 64, seed: int = 0,
          config: LlamaConfig = None, progress=None, warmup: int = 3) -> TrainResult:
    """Trains from seed `seed` on `device`; times the steps after `warmup`. `progress` (a
    callable taking (step, loss, tokens_per_second)) is told after each step."""
    trainer = TrainingStep(device, batch, seq, seed, config)
    is_tpu = torch.device(device).type == "tpu"
    if is_tpu:
        torch.tpu.reset_peak_memory_stats()
    losses = []
    started = None
    tokens_per_second = 0.0
    for step in range(steps):
        if step == warmup:
            started = time.perf_counter()
        loss_value = trainer.step(step)
        losses.append(loss_value)
        if started is not None and step > warmup:
            tokens_per_second = (step - warmup) * trainer.tokens_per_step / (time.perf_counter() - started)
        if progress is not None:
            progress(step, loss_value, tokens_per_second)
    if started is not None and steps > warmup:
        tokens_per_second = (steps - warmup) * trainer.tokens_per_step / (time.perf_counter() - started)
    peak = torch.tpu.max_memory_allocated() if is_tpu else 0
    return TrainResult(device, steps, tokens_per_second, losses[-1], losses, peak)
