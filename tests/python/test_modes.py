"""Execution modes (Strict: asynchronous; Debug: each op finishes before it returns; Fused:
ops recorded and flushed as programs), their selection by API and environment, NaN/Inf
checks, asynchronous error reporting, and the metrics that prove what ran."""

import pytest
import torch

import torch_tpu
from conftest import assert_tpu_close, run_python, run_python_ok


def out_of_range_index_select():
    """An op whose arguments pass the shape checks but fail on the chip: index 9 of 4 rows."""
    x = torch.randn(4, 3, device="tpu")
    return torch.index_select(x, 0, torch.tensor([0, 9], device="tpu"))


# --- selecting a mode ------------------------------------------------------------------------

def test_set_get_mode():
    assert torch_tpu.get_mode() == "strict"
    torch_tpu.set_mode("debug")
    assert torch_tpu.get_mode() == "debug"
    torch_tpu.set_mode("strict")
    assert torch_tpu.get_mode() == "strict"


def test_mode_context_manager_restores_even_on_error():
    with torch_tpu.mode("debug"):
        assert torch_tpu.get_mode() == "debug"
        with torch_tpu.mode("strict"):
            assert torch_tpu.get_mode() == "strict"
        assert torch_tpu.get_mode() == "debug"
    assert torch_tpu.get_mode() == "strict"
    with pytest.raises(KeyError):
        with torch_tpu.mode("debug"):
            raise KeyError("boom")
    assert torch_tpu.get_mode() == "strict"


def test_unknown_mode_is_a_value_error():
    with pytest.raises(ValueError, match="unknown tpu execution mode 'turbo': expected one of 'strict', 'debug', 'fused'"):
        torch_tpu.set_mode("turbo")
    assert torch_tpu.get_mode() == "strict"


def test_fused_mode_by_api_and_context_manager_flushes_when_switching():
    x = torch.ones(4, device="tpu")
    with torch_tpu.mode("fused"):
        assert torch_tpu.get_mode() == "fused"
        pending = x * 3  # recorded, not run
    # Leaving the mode flushed the pending work: strict sees the value.
    assert torch_tpu.get_mode() == "strict"
    assert_tpu_close(pending, torch.full((4,), 3.0))
    torch_tpu.set_mode("defer_and_fuse")  # Google's name for the mode
    assert torch_tpu.get_mode() == "fused"


@pytest.mark.parametrize("env,expected", [
    ({}, "strict"),
    ({"TORCH_TPU_MODE": "debug"}, "debug"),
    ({"TPU_LAUNCH_BLOCKING": "1"}, "debug"),
    ({"TORCH_TPU_MODE": "fused"}, "fused"),
    ({"TPU_DEFER_AND_FUSE": "1"}, "fused"),
], ids=["default", "TORCH_TPU_MODE", "TPU_LAUNCH_BLOCKING", "TORCH_TPU_MODE_fused",
        "TPU_DEFER_AND_FUSE"])
def test_mode_from_environment(env, expected):
    code = """
import torch, torch_tpu
(torch.ones(3, device="tpu") + 1).cpu()
print(torch_tpu.get_mode(), torch_tpu.metrics()["syncs"].get("debug_mode", 0) > 0)
"""
    assert run_python_ok(code, env=env).split() == [expected, str(expected == "debug")]


def test_unknown_mode_in_environment_is_a_clear_error():
    result = run_python("import torch_tpu; torch_tpu.get_mode()", env={"TORCH_TPU_MODE": "turbo"})
    assert result.returncode != 0
    assert "ValueError: unknown tpu execution mode 'turbo'" in result.stderr


# --- what each mode does ---------------------------------------------------------------------

def test_strict_mode_returns_before_the_op_ran():
    y = out_of_range_index_select()  # would raise here if the op ran synchronously
    assert y.shape == (2, 3) and y.is_tpu  # shapes are known at once (Meta kernel)
    with pytest.raises(RuntimeError, match="aten::index_select"):
        torch.tpu.synchronize()
    assert torch_tpu.metrics()["syncs"].get("debug_mode", 0) == 0


@pytest.mark.parametrize("sync_point", ["synchronize", "cpu", "item", "accelerator"])
def test_async_error_surfaces_at_the_next_sync_naming_the_op(sync_point):
    x_cpu = torch.arange(12.0).view(4, 3)
    x = x_cpu.tpu()
    out_of_range_index_select()
    later = x * 2  # queued after the failing op
    with pytest.raises(RuntimeError, match="index_select") as error:
        if sync_point == "synchronize":
            torch.tpu.synchronize()
        elif sync_point == "cpu":
            later.cpu()
        elif sync_point == "item":
            later.sum().item()
        else:
            torch.accelerator.synchronize()
    assert "index out of range" in str(error.value)
    # The error is reported once; the chip keeps working and later ops are right.
    torch.tpu.synchronize()
    assert_tpu_close(later, x_cpu * 2)
    assert_tpu_close(x.index_select(0, torch.tensor([3, 1], device="tpu")), x_cpu[[3, 1]])


def test_async_error_message_has_no_cpp_backtrace():
    out_of_range_index_select()
    with pytest.raises(RuntimeError) as error:
        torch.tpu.synchronize()
    assert "frame #0" not in str(error.value)


def test_debug_mode_raises_at_the_op():
    with torch_tpu.mode("debug"):
        with pytest.raises(RuntimeError, match="index_select"):
            out_of_range_index_select()
        torch.tpu.synchronize()  # nothing left pending
        assert_tpu_close(torch.ones(3, device="tpu") * 2, torch.full((3,), 2.0))


def test_debug_mode_waits_for_every_op():
    torch_tpu.set_mode("debug")
    torch_tpu.reset_metrics()
    x = torch.ones(4, device="tpu")
    y = (x + 1) * 3
    y.add_(1)
    metrics = torch_tpu.metrics()
    assert metrics["ops_launched"] >= 4
    assert metrics["syncs"]["debug_mode"] == metrics["ops_launched"]
    assert_tpu_close(y, torch.full((4,), 7.0))


# --- NaN / Inf checks ------------------------------------------------------------------------

def test_check_nans_in_debug_names_the_op():
    torch_tpu.set_mode("debug")
    torch_tpu.set_check_nans(True)
    with pytest.raises(RuntimeError, match="aten::log"):
        torch.log(-torch.ones(3, device="tpu"))
    with pytest.raises(RuntimeError, match="aten::div"):
        torch.ones(2, device="tpu") / torch.zeros(2, device="tpu")  # Inf
    assert_tpu_close(torch.log(torch.ones(3, device="tpu")), torch.zeros(3))  # finite: fine


def test_nans_pass_unchecked_without_the_flag_or_outside_debug():
    torch_tpu.set_mode("debug")
    assert torch.log(-torch.ones(3, device="tpu")).isnan().all().item()
    torch_tpu.set_mode("strict")
    torch_tpu.set_check_nans(True)  # only Debug checks
    assert torch.log(-torch.ones(3, device="tpu")).isnan().all().item()


def test_check_nans_from_environment():
    code = """
import torch, torch_tpu
try:
    torch.log(-torch.ones(3, device="tpu"))
    print("no error")
except RuntimeError as error:
    print(error)
"""
    out = run_python_ok(code, env={"TORCH_TPU_MODE": "debug", "TORCH_TPU_CHECK_NANS": "1"})
    assert "aten::log" in out and "NaN or Inf" in out


# --- metrics ---------------------------------------------------------------------------------

def test_repeated_calls_hit_the_shape_cache():
    x = torch.randn(5, 7, device="tpu")
    (x * 3).sum()                      # first time: shapes inferred (and cached)
    torch_tpu.reset_metrics()
    for _ in range(10):
        (x * 3).sum()
    cache = torch_tpu.metrics()["shape_cache"]
    assert cache["misses"] == 0 and cache["hits"] >= 20


def test_metrics_count_ops_and_syncs_by_reason():
    fresh = torch_tpu.metrics()
    assert {k: fresh[k] for k in ("ops_launched", "fallbacks", "syncs")} == {
        "ops_launched": 0, "fallbacks": {}, "syncs": {}}
    assert fresh["shape_cache"]["hits"] == fresh["shape_cache"]["misses"] == 0
    x = torch.ones(3, device="tpu")
    y = (x + 1) * 2
    launched = torch_tpu.metrics()["ops_launched"]
    assert launched >= 3
    assert y.sum().item() == 12.0
    y.cpu()
    torch.tpu.synchronize()
    metrics = torch_tpu.metrics()
    assert metrics["ops_launched"] > launched
    assert metrics["syncs"]["item"] == 1
    assert metrics["syncs"]["copy_to_host"] == 1
    assert metrics["syncs"]["device_synchronize"] == 1
    assert metrics["fallbacks"] == {}
    torch_tpu.reset_metrics()
    fresh = torch_tpu.metrics()
    assert {k: fresh[k] for k in ("ops_launched", "fallbacks", "syncs")} == {
        "ops_launched": 0, "fallbacks": {}, "syncs": {}}
    assert fresh["shape_cache"]["hits"] == fresh["shape_cache"]["misses"] == 0


def test_modes_are_named_by_their_policies():
    assert torch_tpu.mode_names() == ["strict", "debug", "fused"]
    with torch_tpu.mode("defer_and_fuse"):
        assert torch_tpu.get_mode() == "fused"
        assert torch_tpu._C._mode_flushes_after_backward()
        assert torch_tpu._C._mode_recomputes_saved_results()
    with torch_tpu.mode("debug"):
        assert not torch_tpu._C._mode_flushes_after_backward()
