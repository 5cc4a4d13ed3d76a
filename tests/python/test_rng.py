"""Random numbers on tpu: seeding, reproducibility across modes, RNG state save/restore,
dropout masks, per-chip seeding, and explicit torch.Generator(device="tpu")."""

import pytest
import torch
import torch.nn.functional as F

import torch_tpu


def draw():
    """A mix of random ops, read back to the host."""
    return torch.cat([torch.randn(100, device="tpu"), torch.rand(50, device="tpu"),
                      torch.randint(0, 1000, (20,), device="tpu").float(),
                      torch.empty(30, device="tpu").normal_(2.0, 3.0),
                      torch.empty(30, device="tpu").uniform_(-1, 1)]).cpu()


def test_manual_seed_reproduces_values():
    torch.manual_seed(1234)
    first = draw()
    torch.manual_seed(1234)
    second = draw()
    torch.manual_seed(4321)
    other = draw()
    torch.testing.assert_close(first, second, rtol=0, atol=0)
    assert not torch.equal(first, other)
    assert not torch.equal(draw(), draw())  # successive draws advance the generator


def test_same_values_in_strict_and_debug():
    values = {}
    for mode in ("strict", "debug"):
        with torch_tpu.mode(mode):
            torch.manual_seed(7)
            values[mode] = draw()
    torch.testing.assert_close(values["strict"], values["debug"], rtol=0, atol=0)


def test_tpu_seed_functions():
    torch.tpu.manual_seed(5)
    first = draw()
    torch.tpu.manual_seed_all(5)
    second = draw()
    torch.testing.assert_close(first, second, rtol=0, atol=0)
    assert torch.tpu.initial_seed() == 5
    torch.tpu.seed()
    assert torch.tpu.initial_seed() != 5


def test_tpu_seed_is_independent_of_the_cpu_generator():
    torch.tpu.manual_seed(5)
    first = draw()
    torch.tpu.manual_seed(5)
    torch.randn(1000)  # drawing on CPU must not move the tpu generator
    second = draw()
    torch.testing.assert_close(first, second, rtol=0, atol=0)


def test_rng_state_round_trip():
    torch.manual_seed(3)
    draw()
    state = torch.tpu.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    expected = draw()
    torch.randn(1000, device="tpu")  # move on
    torch.tpu.set_rng_state(state)
    torch.testing.assert_close(draw(), expected, rtol=0, atol=0)
    states = torch.tpu.get_rng_state_all()
    assert len(states) == torch.tpu.device_count()
    expected = draw()
    torch.tpu.set_rng_state_all(states)
    torch.testing.assert_close(draw(), expected, rtol=0, atol=0)


@pytest.mark.parametrize("mode", ["strict", "debug"])
def test_dropout_masks_are_reproducible(mode):
    torch_tpu.set_mode(mode)
    x = torch.ones(64, 64, device="tpu")
    layer = torch.nn.Dropout(0.4).train()
    torch.manual_seed(99)
    first = layer(x).cpu()
    state = torch.tpu.get_rng_state()
    second_draw = layer(x).cpu()
    torch.manual_seed(99)
    torch.testing.assert_close(layer(x).cpu(), first, rtol=0, atol=0)
    torch.tpu.set_rng_state(state)
    torch.testing.assert_close(F.dropout(x, 0.4).cpu(), second_draw, rtol=0, atol=0)
    assert not torch.equal(first, second_draw)


def test_explicit_tpu_generator():
    generator = torch.Generator(device="tpu")
    assert generator.device == torch.device("tpu:0")
    generator.manual_seed(21)
    first = torch.randn(50, device="tpu", generator=generator).cpu()
    torch.manual_seed(0)
    torch.randn(50, device="tpu")  # the default generator is a different stream of numbers
    generator.manual_seed(21)
    second = torch.randn(50, device="tpu", generator=generator).cpu()
    torch.testing.assert_close(first, second, rtol=0, atol=0)
    state = generator.get_state()
    third = torch.rand(10, device="tpu", generator=generator).cpu()
    generator.set_state(state)
    torch.testing.assert_close(torch.rand(10, device="tpu", generator=generator).cpu(), third,
                               rtol=0, atol=0)
    ints = torch.randint(0, 5, (100,), device="tpu", generator=generator)
    assert ints.is_tpu and 0 <= ints.min().item() and ints.max().item() < 5


def test_cpu_generator_is_rejected_for_tpu_tensors():
    with pytest.raises(RuntimeError, match="device type for generator"):
        torch.randn(3, device="tpu", generator=torch.Generator())
