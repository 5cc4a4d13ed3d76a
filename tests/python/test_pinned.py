"""Host <-> chip copies: pinned (page-locked) host memory, non_blocking copies both ways, the
staging of pageable sources, and DataLoader(pin_memory=True)."""

import pytest
import torch

import torch_tpu
from conftest import assert_tpu_close, finishes_within


def test_pin_memory():
    x = torch.arange(16.0)
    assert not x.is_pinned()
    pinned = x.pin_memory()
    assert pinned.is_pinned()
    assert pinned.data_ptr() != x.data_ptr()
    torch.testing.assert_close(pinned, x, rtol=0, atol=0)
    assert pinned[4:].is_pinned()  # views into pinned memory are pinned too
    assert torch.empty(8, pin_memory=True).is_pinned()
    assert torch.empty(8).pin_memory().is_pinned()


def test_tpu_tensors_cannot_be_pinned():
    with pytest.raises(RuntimeError, match="pinned"):
        torch.empty(4, device="tpu", pin_memory=True)


def test_non_blocking_copies_both_ways():
    source = torch.randn(1000, generator=torch.Generator().manual_seed(0)).pin_memory()
    on_chip = source.to("tpu", non_blocking=True)
    assert on_chip.is_tpu
    result = torch.empty(1000).pin_memory()
    result.copy_(on_chip * 3 + 1, non_blocking=True)
    # A non_blocking copy into pinned memory does not wait for the chip (as on CUDA) ...
    assert "copy_to_host" not in torch_tpu.metrics()["syncs"]
    torch.tpu.synchronize()
    torch.testing.assert_close(result, source * 3 + 1, rtol=0, atol=0)
    # ... while one into pageable memory does.
    pageable = torch.empty(1000)
    pageable.copy_(on_chip, non_blocking=True)
    assert torch_tpu.metrics()["syncs"]["copy_to_host"] == 1
    torch.testing.assert_close(pageable, source, rtol=0, atol=0)


def test_non_blocking_to_cpu_returns_a_pinned_tensor():
    # As on CUDA, Tensor.to("cpu", non_blocking=True) allocates pinned memory and does not
    # wait: the values are there after a synchronize.
    source = torch.arange(6.0).view(2, 3)
    back = (source.tpu() * 2).to("cpu", non_blocking=True)
    assert back.is_pinned()
    assert "copy_to_host" not in torch_tpu.metrics()["syncs"]
    torch.tpu.synchronize()
    torch.testing.assert_close(back, source * 2, rtol=0, atol=0)
    blocking = (source.tpu() * 2).to("cpu")
    assert not blocking.is_pinned()
    torch.testing.assert_close(blocking, source * 2, rtol=0, atol=0)


def test_pageable_source_may_be_reused_at_once():
    # Blocking host->chip copies stage pageable memory, so overwriting the source right after
    # the call (while the copy may still be queued) must not change what the chip receives.
    torch.tpu.synchronize()
    source = torch.arange(10000.0)
    chips = []
    for value in range(3):
        chips.append(source.to("tpu"))
        source.fill_(-value - 1)
    assert_tpu_close(chips[0], torch.arange(10000.0), rtol=0, atol=0)
    assert_tpu_close(chips[1], torch.full((10000,), -1.0), rtol=0, atol=0)
    assert_tpu_close(chips[2], torch.full((10000,), -2.0), rtol=0, atol=0)


def test_strided_copies():
    x = torch.arange(24.0).view(4, 6)
    on_chip = x.t().tpu()  # non-contiguous source
    assert_tpu_close(on_chip, x.t(), rtol=0, atol=0)
    into = torch.zeros(6, 8, device="tpu")
    into[:, 1:5].copy_(x.t())  # host -> strided chip view
    expected = torch.zeros(6, 8)
    expected[:, 1:5] = x.t()
    assert_tpu_close(into, expected, rtol=0, atol=0)
    host = torch.zeros(8, 6)
    host[2:6].copy_(into[:, 1:5].t())  # strided chip view -> host view
    torch.testing.assert_close(host[2:6], x, rtol=0, atol=0)


@pytest.mark.parametrize("num_workers", [0, 1])
def test_dataloader_pin_memory_batches_are_pinned(num_workers):
    data = torch.arange(40.0).view(10, 4)
    labels = torch.arange(10)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data, labels),
                                         batch_size=4, pin_memory=True, num_workers=num_workers)
    seen = []
    for batch, batch_labels in loader:
        assert batch.is_pinned() and batch_labels.is_pinned()
        seen.append(batch.to("tpu", non_blocking=True).sum(1))
    torch.tpu.synchronize()
    assert_tpu_close(torch.cat(seen), data.sum(1), rtol=0, atol=0)


DEADLOCK_SCRIPT = """
import torch, torch_tpu
a = torch.randn(512, 512, device="tpu")
for _ in range(20):                    # keep the chip busy so the copy below stays queued
    a = torch.tanh(a @ a)
pinned = torch.randn(1 << 20).pin_memory()
on_chip = pinned.to("tpu", non_blocking=True)  # the queued copy holds a reference to `pinned`
del pinned                             # e.g. the next DataLoader batch replaces it
torch.manual_seed(0)                   # waits for the chip while holding the GIL
print("seeded")
"""


def test_dropping_a_pinned_source_then_seeding_does_not_deadlock():
    assert finishes_within(DEADLOCK_SCRIPT, timeout=10), "torch.manual_seed hung (deadlock)"
