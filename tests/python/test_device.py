"""The tpu device as PyTorch sees it: torch.accelerator, torch.tpu, device strings, Tensor/Module
methods, device addresses, and registration by ``import torch`` alone."""

import json

import pytest
import torch

import torch_tpu
from conftest import assert_tpu_close, run_python, run_python_ok, to_tpu_copy

GIB = 2**30


def test_current_accelerator_is_tpu():
    assert torch.accelerator.current_accelerator() == torch.device("tpu")
    assert torch.accelerator.is_available()
    assert torch.accelerator.device_count() == torch.tpu.device_count() == 1
    assert torch.accelerator.current_device_index() == 0
    torch.accelerator.set_device_index(0)
    assert torch.accelerator.current_device_index() == 0


def test_accelerator_synchronize_waits_for_the_chip():
    x = torch.ones(1000, device="tpu") * 2
    torch.accelerator.synchronize()
    assert torch_tpu.metrics()["syncs"].get("device_synchronize", 0) == 1
    assert_tpu_close(x, torch.full((1000,), 2.0))


def test_device_module_basics():
    assert torch.tpu.is_available()
    assert torch.tpu.device_count() == 1
    assert torch.tpu.current_device() == 0
    torch.tpu.set_device(0)
    torch.tpu.set_device("tpu:0")
    torch.tpu.set_device(torch.device("tpu", 0))
    assert torch.tpu.current_device() == 0
    torch.tpu.synchronize()
    torch.tpu.synchronize(0)
    assert torch_tpu.metrics()["syncs"]["device_synchronize"] == 2


def test_device_name_and_properties():
    name = torch.tpu.get_device_name()
    assert "TPU" in name
    assert torch.tpu.get_device_name(0) == name
    props = torch.tpu.get_device_properties(0)
    assert props.name == name
    assert props.total_memory == 16 * GIB  # the default chip capacity (TORCH_TPU_HBM_BYTES)
    assert torch.tpu.get_device_properties("tpu:0") == props


def test_device_context_manager_on_one_chip():
    with torch.tpu.device(0):
        assert torch.tpu.current_device() == 0
        assert torch.ones(1, device="tpu").device == torch.device("tpu:0")
    with torch.tpu.device(None):  # a no-op, as on CUDA
        assert torch.tpu.current_device() == 0


def test_device_strings():
    dev = torch.device("tpu:0")
    assert dev.type == "tpu" and dev.index == 0
    assert torch.device("tpu").index is None
    x = torch.ones(2, device=dev)
    assert x.device == dev
    # A device without an index means the current chip.
    assert torch.zeros(2, device="tpu").device == torch.device("tpu", 0)
    assert torch.empty(2).to("tpu").device == dev


def test_tensor_tpu_method_and_is_tpu():
    cpu = torch.arange(6.0).view(2, 3)
    x = cpu.tpu()
    assert x.is_tpu and not cpu.is_tpu
    assert x.device == torch.device("tpu:0")
    assert x.tpu() is x  # already there: no copy, as Tensor.cuda()
    assert_tpu_close(x, cpu)
    assert torch.ones(1).tpu(0).device == torch.device("tpu:0")


def test_module_tpu_moves_parameters_and_buffers():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).eval()
    model_tpu = to_tpu_copy(model)
    for tensor in [*model_tpu.parameters(), *model_tpu.buffers()]:
        assert tensor.is_tpu, tensor.device
    x = torch.randn(5, 3)
    assert_tpu_close(model_tpu(x.tpu()), model(x))


def test_module_to_keeps_parameter_objects_and_weight_ties():
    """As with CUDA, module.to("tpu") moves each Parameter in place (`.data`), so references
    (optimizers made before the move) and tied weights (an LM head sharing its embedding) hold."""
    embedding = torch.nn.Embedding(10, 4)
    head = torch.nn.Linear(4, 10, bias=False)
    head.weight = embedding.weight
    model = torch.nn.Sequential(embedding, head)
    weight = embedding.weight
    model.to("tpu")
    assert embedding.weight is weight and weight.device.type == "tpu"
    assert head.weight is embedding.weight
    assert len(list(model.parameters())) == 1
    model.cpu()
    assert embedding.weight is weight and weight.device.type == "cpu"


@pytest.mark.parametrize("make", [
    lambda: torch.ones(2, device="tpu:5"),
    lambda: torch.ones(2).to("tpu:5"),
    lambda: torch.ones(2).tpu(5),
    lambda: torch.tpu.set_device(5),
    lambda: torch.accelerator.set_device_index(5),
    lambda: torch.tpu.device(5).__enter__(),
], ids=["factory", "to", "Tensor.tpu", "tpu.set_device", "accelerator.set_device_index",
        "device_ctx"])
def test_invalid_device_index_is_a_clear_error(make):
    with pytest.raises(RuntimeError, match=r"invalid tpu device index 5.*valid: 0\.\.0"):
        make()
    assert torch.tpu.current_device() == 0  # nothing changed


def test_data_ptr_is_a_device_handle_not_a_host_address():
    x = torch.ones(16, device="tpu")
    y = torch.ones(16, device="tpu")
    assert x.data_ptr() >= 2**56  # outside any canonical x86-64 / arm64 user address
    assert y.data_ptr() >= 2**56 and y.data_ptr() != x.data_ptr()
    # Views are offsets into the same buffer, so data_ptr arithmetic works as on CUDA.
    assert x[3:].data_ptr() == x.data_ptr() + 3 * x.element_size()
    assert x.view(4, 4).data_ptr() == x.data_ptr()
    # The handle is stable for the storage's life.
    before = x.data_ptr()
    x.add_(1)
    torch.tpu.synchronize()
    assert x.data_ptr() == before
    assert x.untyped_storage().data_ptr() == before


def test_import_torch_alone_registers_tpu():
    out = run_python_ok("import torch; print(torch.randn(2, device='tpu').device)")
    assert out.strip() == "tpu:0"


def test_two_host_chips_from_the_environment():
    code = """
import torch
assert torch.tpu.device_count() == torch.accelerator.device_count() == 2
with torch.tpu.device(1):
    assert torch.tpu.current_device() == 1
    on_1 = torch.arange(4.0, device="tpu")
assert torch.tpu.current_device() == 0
assert on_1.device == torch.device("tpu:1")
moved = on_1.to("tpu:0") * 2            # chip-to-chip copy
torch.tpu.synchronize(1)
torch.accelerator.set_device_index(1)
assert torch.accelerator.current_device_index() == 1
assert torch.ones(1, device="tpu").device == torch.device("tpu:1")
torch.accelerator.set_device_index(0)
print(moved.device, moved.cpu().tolist(), torch.ones(2).tpu(1).device)
"""
    out = run_python_ok(code, env={"TORCH_TPU_HOST_CHIPS": 2})
    assert out.split("\n")[0] == "tpu:0 [0.0, 2.0, 4.0, 6.0] tpu:1"


def test_torchrun_local_world_size_gives_one_chip_per_local_rank():
    """Under torchrun a process sees one chip per local rank (as a GPU host shows every GPU),
    so `torch.tpu.set_device(LOCAL_RANK)` works unchanged; TORCH_TPU_HOST_CHIPS still wins."""
    code = "import torch, torch_tpu; print(torch.tpu.device_count())"
    assert run_python_ok(code, env={"LOCAL_WORLD_SIZE": 3}).strip() == "3"
    assert run_python_ok(code, env={"LOCAL_WORLD_SIZE": 3, "TORCH_TPU_HOST_CHIPS": 1}).strip() == "1"
    assert run_python_ok(code).strip() == "1"


def test_device_capability_lists_the_dtypes_a_tpu_tensor_can_hold_and_convert():
    supported = torch.accelerator.get_device_capability("tpu:0")["supported_dtypes"]
    assert supported == torch.accelerator.get_device_capability()["supported_dtypes"]
    assert {torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool,
            torch.complex64, torch.float8_e4m3fn, torch.uint16} <= supported
    assert not {torch.qint8, torch.quint8, torch.qint32, torch.bits8, torch.int4} & supported
    for dtype in supported:
        # Copied there and back bit for bit; converted on the chip wherever CPU converts it
        # (CPU has no conversion for float4_e2m1fn_x2).
        values = torch.tensor([0, 1, 1, 0, 1, 0, 0, 1], dtype=torch.uint8).repeat(2).view(dtype)
        on_tpu = values.to("tpu")
        assert torch.equal(on_tpu.cpu().view(torch.uint8), values.view(torch.uint8)), dtype
        wide = torch.complex64 if dtype.is_complex else torch.float32
        try:
            expected = values.to(wide)
        except NotImplementedError:
            continue
        assert torch.allclose(on_tpu.to(wide).cpu(), expected, equal_nan=True), dtype
    with pytest.raises(RuntimeError, match="tpu device index 7 out of range"):
        torch.accelerator.get_device_capability("tpu:7")


def test_a_child_forked_after_tpu_started_is_refused_and_fork_workers_still_load_data():
    # The runtime's queue threads do not survive a fork: a child of a process that used tpu
    # must refuse it clearly (as CUDA does), leave inherited memory alone, and still run CPU
    # work such as DataLoader workers; a child forked before tpu started may use it.
    out = run_python_ok("""
import gc, os, torch, torch_tpu
from torch.utils.data import DataLoader, TensorDataset

def in_child(work):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.write(write, work().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        return f.read()

def fresh_use():
    return str((torch.ones(2, device="tpu") + 1).cpu().tolist())

print("before:", in_child(fresh_use))
x = torch.ones(2, device="tpu")

def refused():
    errors = []
    for fn in (lambda: torch.ones(2, device="tpu"), lambda: (x + 1).cpu()):
        try:
            fn()
            errors.append("worked")
        except RuntimeError as e:
            errors.append("forked" if "forked" in str(e) and "spawn" in str(e) else str(e))
    global_x = globals().pop("x")
    del global_x
    gc.collect()                 # an inherited tpu tensor freed in the child: left alone
    torch.manual_seed(0)         # seeds CPU only: tpu is in a bad fork
    # As on CUDA, the device count is still answered (the parent's).
    count = torch.tpu.device_count() == torch.accelerator.device_count() == 1
    return ",".join(errors) + ("|bad fork" if torch.tpu._is_in_bad_fork() else "") + f"|count {count}"

print("after:", in_child(refused))
data = TensorDataset(torch.arange(32, dtype=torch.float32).reshape(16, 2))
loader = DataLoader(data, batch_size=4, num_workers=2, multiprocessing_context="fork")
total = sum(batch[0].to("tpu").sum() for batch in loader)
print("loader:", float(total.cpu()), "parent:", (x + 1).cpu().tolist())
""")
    assert "before: [2.0, 2.0]" in out, out
    assert "after: forked,forked|bad fork|count True" in out, out
    assert "loader: 496.0 parent: [2.0, 2.0]" in out, out


def test_the_autograd_profiler_times_tpu_ops_on_the_device():
    # use_device="tpu": each op's start and end are events on its stream, as on CUDA.
    result = run_python("""
import json, time, torch, torch_tpu
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).to("tpu")
x = torch.randn(16, 32, device="tpu")
model(x).cpu()
start = time.perf_counter()
with torch.autograd.profiler.profile(use_device="tpu") as prof:
    for _ in range(20):
        y = model(x)
    y.cpu()
seconds = time.perf_counter() - start
events = prof.function_events
addmm = [e for e in events if e.name == "aten::addmm"]
print(json.dumps({"seconds": seconds, "events": len(events), "addmm": len(addmm),
                  "addmm_device_us": sum(e.device_time_total for e in addmm),
                  "negative": sum(e.device_time_total < 0 or e.cpu_time_total < 0 for e in events),
                  "largest_cpu_us": max(e.cpu_time_total for e in events)}))
""")
    assert result.returncode == 0, result.stderr
    assert "not enabled" not in result.stderr and "kineto_ctx_ptr" not in result.stderr, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["addmm"] == 40 and out["negative"] == 0, out
    assert 0 < out["addmm_device_us"] < 10e6 and out["largest_cpu_us"] < 10e6, out
    assert out["seconds"] < 5, out  # it was 11.5 s, every op raising inside the profiler


def test_a_child_forked_after_tpu_started_exits_normally_and_quietly():
    # sys.exit in the child runs the exit handlers: the chips it inherited are its parent's,
    # left alone (destroying their queues waited forever for the parent's threads).
    result = run_python("""
import os, sys, torch, torch_tpu
(torch.ones(3, device="tpu") + 1).cpu()
pid = os.fork()
if pid == 0:
    sys.exit(0)
_, status = os.waitpid(pid, 0)
print("child status", status)
""", timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "child status 0"
    assert "tpu" not in result.stderr


def test_work_still_queued_at_exit_runs_before_the_libraries_it_calls_are_torn_down():
    # Kernels left queued (on the default and a side stream) used to run during C++ static
    # destruction, after oneDNN had destroyed its state: GELU on a 3-d tensor crashed there.
    result = run_python("""
import torch, torch_tpu
x = torch.randn(8, 256, 1024, device="tpu")
with torch.tpu.stream(torch.tpu.Stream()):
    y = x
    for _ in range(300):
        y = torch.nn.functional.gelu(y)
for _ in range(300):
    x = torch.nn.functional.gelu(x)
""", timeout=120)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert result.stderr == ""
