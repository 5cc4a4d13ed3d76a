"""Random numbers on tpu: seeding, reproducibility across modes, RNG state save/restore,
dropout masks, per-chip seeding, explicit torch.Generator(device="tpu"), the counter-based
state (seed, offset) and TORCH_TPU_RNG=cpu (CPU's stream of numbers)."""

import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from conftest import run_python, run_python_ok


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


# --- the counter-based generator: state (seed, offset) ------------------------------------


def state_of(seed: int, offset: int) -> torch.Tensor:
    """A tpu RNG state: seed then offset, little-endian uint64s (CUDA's layout)."""
    return torch.tensor([seed, offset], dtype=torch.int64).view(torch.uint8)


def test_the_state_is_a_seed_and_an_offset_that_each_op_moves_on_by_its_draws():
    torch.manual_seed(1234)
    assert torch.equal(torch.tpu.get_rng_state(), state_of(1234, 0))
    generator = torch.tpu.default_generators[0]
    torch.randn(10, device="tpu")  # 10 numbers, rounded up to a multiple of 4
    assert generator.get_offset() == 12
    torch.empty(3, 5, device="tpu").uniform_()
    assert generator.get_offset() == 28
    assert torch.equal(torch.tpu.get_rng_state(), state_of(1234, 28))
    generator.set_offset(1000)
    assert torch.equal(torch.tpu.get_rng_state(), state_of(1234, 1000))
    torch.manual_seed(1234)  # seeding starts the offset again
    assert generator.get_offset() == 0


def test_a_seed_and_offset_alone_decide_an_ops_numbers():
    torch.tpu.set_rng_state(state_of(77, 40))
    first = torch.randn(64, device="tpu").cpu()
    torch.manual_seed(5)
    torch.rand(1000, device="tpu")  # whatever ran before
    torch.tpu.set_rng_state(state_of(77, 40))
    torch.testing.assert_close(torch.randn(64, device="tpu").cpu(), first, rtol=0, atol=0)
    neighbours = []
    for seed, offset in ((77, 44), (77, 104), (78, 40)):
        torch.tpu.set_rng_state(state_of(seed, offset))
        neighbours.append(torch.randn(64, device="tpu").cpu())
    for other in neighbours:  # nearby offsets and seeds are unrelated streams
        assert not torch.isin(first, other).any()


def test_the_numbers_are_well_distributed():
    torch.manual_seed(0)
    normal = torch.randn(200_000, device="tpu").cpu()
    uniform = torch.rand(200_000, device="tpu").cpu()
    coins = torch.bernoulli(torch.full((200_000,), 0.3, device="tpu")).cpu()
    assert abs(normal.mean().item()) < 0.01 and abs(normal.std().item() - 1) < 0.01
    assert 0 <= uniform.min().item() and uniform.max().item() < 1
    assert abs(uniform.mean().item() - 0.5) < 0.005
    assert abs(coins.mean().item() - 0.3) < 0.005
    # Successive ops draw unrelated numbers: no correlation between neighbouring draws.
    a, b = torch.randn(100_000, device="tpu").cpu(), torch.randn(100_000, device="tpu").cpu()
    assert abs(torch.corrcoef(torch.stack([a, b]))[0, 1].item()) < 0.02


def test_the_state_is_the_hosts_reading_it_waits_for_no_queued_work():
    torch.manual_seed(2)
    x = torch.randn(256, 256, device="tpu")
    torch.tpu.synchronize()
    before = sum(torch_tpu.metrics()["syncs"].values())
    for _ in range(3):
        y = x @ x
        state = torch.tpu.get_rng_state()
        torch.tpu.set_rng_state(state)
    assert sum(torch_tpu.metrics()["syncs"].values()) == before
    y.cpu()


def test_fork_rng_restores_the_tpu_state():
    torch.manual_seed(9)
    with torch.random.fork_rng(device_type="tpu"):
        torch.randn(100, device="tpu")
    assert torch.equal(torch.tpu.get_rng_state(), state_of(9, 0))


def test_a_state_of_another_size_is_a_clear_error():
    cpu_state = torch.get_rng_state()  # an mt19937 state, 5056 bytes
    with pytest.raises(RuntimeError, match="16 bytes"):
        torch.tpu.set_rng_state(cpu_state)
    with pytest.raises(RuntimeError, match="uint8"):
        torch.tpu.set_rng_state(torch.zeros(2, dtype=torch.int64))


@pytest.mark.parametrize("mode", ["strict", "debug", "fused"])
def test_every_mode_draws_the_same_numbers(mode):
    with torch_tpu.mode(mode):
        torch.manual_seed(31)
        x = torch.ones(32, 32, device="tpu")
        values = torch.cat([draw(), F.dropout(x, 0.5).flatten().cpu()])
    with torch_tpu.mode("strict"):
        torch.manual_seed(31)
        x = torch.ones(32, 32, device="tpu")
        expected = torch.cat([draw(), F.dropout(x, 0.5).flatten().cpu()])
    torch.testing.assert_close(values, expected, rtol=0, atol=0)


CPU_STREAM = r"""
import torch, torch_tpu
torch.manual_seed(4)
tpu = torch.cat([torch.randn(50, device="tpu"), torch.rand(20, device="tpu")]).cpu()
torch.manual_seed(4)
cpu = torch.cat([torch.randn(50), torch.rand(20)])
torch.testing.assert_close(tpu, cpu, rtol=0, atol=0)
assert torch.tpu.get_rng_state().numel() == torch.get_rng_state().numel()
try:
    torch.tpu.default_generators[0].get_offset()
except RuntimeError as error:
    assert "TORCH_TPU_RNG=cpu" in str(error), error
else:
    raise AssertionError("get_offset should refuse CPU's stream")
print("ok")
"""


def test_torch_tpu_rng_cpu_draws_cpus_numbers():
    out = run_python_ok(CPU_STREAM, env={"TORCH_TPU_RNG": "cpu"})
    assert out.strip().endswith("ok")


def test_an_unknown_torch_tpu_rng_is_a_clear_error():
    result = run_python("import torch, torch_tpu\ntorch.manual_seed(0)\n",
                        env={"TORCH_TPU_RNG": "mersenne"})
    assert result.returncode != 0
    assert "TORCH_TPU_RNG='mersenne'" in result.stderr and "'philox'" in result.stderr
