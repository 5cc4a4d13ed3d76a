"""The demo model's contenders, shared by the benchmarks that compare execution modes and
compilers on it (fused_demo.py, compile_demo.py): each is a device, a tpu execution mode and a
torch.compile backend (or none), by name; blocks of training steps or inference forwards run
on one."""

from dataclasses import dataclass

import torch

import torch_tpu
from torch_tpu.demo.llama import Llama
from torch_tpu.demo.train import TrainingStep


@dataclass(frozen=True)
class Contender:
    device: str
    mode: str = "strict"
    backend: str | None = None


CONTENDERS = {
    "cpu_eager": Contender("cpu"),
    "inductor": Contender("cpu", backend="inductor"),
    "strict": Contender("tpu"),
    "fused": Contender("tpu", mode="fused"),
    "tpu_compiled": Contender("tpu", backend="tpu"),
}


def use_mode(name):
    torch_tpu.set_mode(CONTENDERS[name].mode)


def device_of(name):
    return CONTENDERS[name].device


def compiled(name, model):
    backend = CONTENDERS[name].backend
    return model if backend is None else torch.compile(model, backend=backend)


def trainer_for(name) -> TrainingStep:
    """The demo's training step on `name`'s device, its model compiled for `name`."""
    use_mode(name)
    trainer = TrainingStep(device_of(name))
    trainer.model = compiled(name, trainer.model)
    return trainer


def training_block(name, steps):
    """A callable training `steps` steps of a model of its own on `name`."""
    trainer = trainer_for(name)
    counter = [0]

    def run():
        use_mode(name)
        for _ in range(steps):
            trainer.step(counter[0])
            counter[0] += 1
        torch_tpu.set_mode("strict")
    return run


def inference_block(name, config, inputs, iterations):
    """A callable running `iterations` forwards (logits read back) on `name`."""
    use_mode(name)
    torch.manual_seed(0)
    model = compiled(name, Llama(config).to(device_of(name)))
    tokens = inputs.to(device_of(name))

    def run():
        use_mode(name)
        with torch.no_grad():
            for _ in range(iterations):
                model(tokens).cpu()
        torch_tpu.set_mode("strict")
    return run
