"""The main thread's OpenMP team in host waits under other processes' load (TORCH_TPU_HOST_TEAM):
the metrics that report it, the team shrinking while neighbours crowd the machine (auto, the
default) and its helper threads gone, the user's torch.set_num_threads count left alone, the
team staying put when fixed or when one thread was asked for, and training results equal to
CPU's whatever the team's size. No timings: the load tests check what the governor did while
every CPU had a busy neighbour, not how fast anything ran."""

import json
import os
import time

import pytest
import torch

import torch_tpu
from conftest import run_python, run_python_ok


def test_metrics_report_the_host_team():
    x = torch.randn(64, 64, device="tpu")
    (x @ x).sum().item()  # the end of a host wait samples (the first one begins a window)
    time.sleep(0.15)
    (x @ x).sum().item()  # one over 100 ms later ends a window
    team = torch_tpu.metrics()["host_team"]
    assert set(team) == {"policy", "threads", "shrinks", "grows", "others_load"}
    assert team["policy"] == "auto"  # the test environment drops TORCH_TPU_* variables
    assert 1 <= team["threads"] <= max(torch.get_num_threads(), 1)
    assert team["shrinks"] >= 0 and team["grows"] >= 0
    assert isinstance(team["others_load"], float)
    # Cores' worth of CPU time: never negative, never (much) more than the machine has.
    assert 0.0 <= team["others_load"] <= os.cpu_count() + 1


def test_reset_metrics_zeroes_the_resize_counts():
    torch_tpu.reset_metrics()
    team = torch_tpu.metrics()["host_team"]
    assert team["shrinks"] == 0 and team["grows"] == 0


# A child that trains a small MLP on tpu and on CPU side by side, syncing (loss.item()) every few
# tens of milliseconds so the governor samples. Loaded phase: one busy process per CPU runs
# beside it until the team shrank and three more steps ran (or LOADED_S passed); at the shrink
# the child calls torch.set_num_threads(SET_AT_SHRINK) if that is set. Quiet phase (QUIET_S,
# may be 0): without the neighbours, until the team grew back. Then it compares the two models.
# MODE, THREADS (0: PyTorch's default), LOADED_S, QUIET_S and SET_AT_SHRINK come first.
LOADED_TRAINING = r"""
import copy, json, os, subprocess, sys, time
import torch, torch_tpu

torch_tpu.set_mode(MODE)
# MKL sets its vector math up on its first call; two threads making that call at once on a
# crowded machine can get a low-accuracy half (CPU eager's first AdamW sqrt was off by 3e-4
# relative in about 1 of 12 runs, with torch_tpu never imported). The CPU reference makes its
# first call before the neighbours start, as the tpu runtime does before its first kernel.
torch.ones(16).sqrt()
if THREADS:
    torch.set_num_threads(THREADS)
full = torch.get_num_threads()

torch.manual_seed(0)
model_cpu = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
model_tpu = copy.deepcopy(model_cpu).tpu()
opt_cpu = torch.optim.AdamW(model_cpu.parameters(), lr=1e-2)
opt_tpu = torch.optim.AdamW(model_tpu.parameters(), lr=1e-2)
x, y = torch.randn(128, 64), torch.randn(128, 8)
xt, yt = x.tpu(), y.tpu()
losses = []

def step():
    results = []
    for model, opt, inputs, targets in ((model_cpu, opt_cpu, x, y), (model_tpu, opt_tpu, xt, yt)):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        opt.step()
        results.append(loss.item())
    losses.append(results)
    time.sleep(0.02)
    return torch_tpu.metrics()["host_team"]

SPIN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"
spinners = [subprocess.Popen([sys.executable, "-S", "-c", SPIN]) for _ in range(os.cpu_count())]
result = {"full": full, "shrunk_at": None, "threads_while_shrunk": None}
try:
    deadline = time.monotonic() + LOADED_S
    while time.monotonic() < deadline:
        team = step()
        if team["shrinks"] and result["shrunk_at"] is None:
            result["shrunk_at"] = len(losses)
            result["threads_while_shrunk"] = (team["threads"], torch.get_num_threads())
            if SET_AT_SHRINK:
                torch.set_num_threads(SET_AT_SHRINK)
        if result["shrunk_at"] is not None and len(losses) >= result["shrunk_at"] + 3:
            break
finally:
    for spinner in spinners:
        spinner.kill()
        spinner.wait()
result["loaded"] = torch_tpu.metrics()["host_team"]
deadline = time.monotonic() + QUIET_S
while time.monotonic() < deadline and not step()["grows"]:
    pass
result["quiet"] = torch_tpu.metrics()["host_team"]
result["threads_at_end"] = torch.get_num_threads()
for p_cpu, p_tpu in zip(model_cpu.parameters(), model_tpu.parameters()):
    torch.testing.assert_close(p_tpu.cpu(), p_cpu, rtol=1e-4, atol=1e-5)
for l_cpu, l_tpu in losses:
    assert abs(l_cpu - l_tpu) <= 1e-4 * max(1.0, abs(l_cpu)), (l_cpu, l_tpu)
print(json.dumps(result))
"""


def loaded_training(mode="strict", loaded_s=10, quiet_s=0, threads=0, set_at_shrink=0, env=None):
    code = (f"MODE, THREADS, LOADED_S, QUIET_S, SET_AT_SHRINK = {mode!r}, {threads}, {loaded_s}, "
            f"{quiet_s}, {set_at_shrink}\n" + LOADED_TRAINING)
    out = run_python_ok(code, env=env, timeout=120)
    return json.loads(out.strip().splitlines()[-1])


def _skip_unless_governor_can_see_the_whole_machine():
    if len(os.sched_getaffinity(0)) != os.cpu_count():
        pytest.skip("this process may run on only some of the CPUs, and the governor measures "
                    "the whole machine's load (/proc/stat), so the neighbours may not crowd it")
    if not os.path.exists("/proc/stat"):
        pytest.skip("no /proc/stat: the governor cannot sample the machine's load")


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_team_shrinks_while_neighbours_crowd_it_and_results_match_cpu(mode):
    _skip_unless_governor_can_see_the_whole_machine()
    result = loaded_training(mode, loaded_s=10)
    if result["full"] < 2:
        pytest.skip("the team has one thread already: nothing to shrink")
    team = result["loaded"]
    assert team["policy"] == "auto"
    assert result["shrunk_at"] is not None, result  # every CPU had a busy neighbour
    team_threads, torch_threads = result["threads_while_shrunk"]
    assert team_threads < result["full"]
    assert torch_threads == result["full"]  # only host waits use the smaller team
    assert team["others_load"] >= 0.5, result


# Debug mode keeps the main thread's team between waits (no worker runs beside the host, so
# nothing frees it after a takeover): with a full team it has helper threads; once the governor
# shrank it, they are gone, and the one-thread waits start none. Threads are counted, not timed.
# POLICY comes first.
HELPERS_UNDER_LOAD = r"""
import json, os, subprocess, sys, time
import torch, torch_tpu

torch_tpu.set_mode("debug")
x = torch.randn(256, 256, device="tpu")
w = torch.randn(256, 256, device="tpu") / 16

def step():
    torch.tanh(x @ w).sum().item()  # parallel kernels, run by the waiting main thread
    time.sleep(0.02)

step()
SPIN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"
spinners = [subprocess.Popen([sys.executable, "-S", "-c", SPIN]) for _ in range(os.cpu_count())]
try:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        step()
        if POLICY == "auto" and torch_tpu.metrics()["host_team"]["shrinks"]:
            break
        if POLICY == "fixed" and time.monotonic() > deadline - 8.5:
            break
    for _ in range(5):
        step()
    threads = len(os.listdir("/proc/self/task"))
    end = time.monotonic() + 1  # a freed helper exits on its own schedule
    while time.monotonic() < end:
        time.sleep(0.05)
        threads = min(threads, len(os.listdir("/proc/self/task")))
finally:
    for spinner in spinners:
        spinner.kill()
        spinner.wait()
print(json.dumps({"threads": threads, "full": torch.get_num_threads(),
                  "team": torch_tpu.metrics()["host_team"]}))
"""


def test_a_shrunk_team_has_no_helper_threads():
    _skip_unless_governor_can_see_the_whole_machine()
    runs = {}
    for policy in ("auto", "fixed"):
        out = run_python_ok(f"POLICY = {policy!r}\n" + HELPERS_UNDER_LOAD,
                            env={"TORCH_TPU_HOST_TEAM": policy}, timeout=120)
        runs[policy] = json.loads(out.strip().splitlines()[-1])
    if runs["fixed"]["full"] < 2:
        pytest.skip("the team has one thread already: no helpers to lose")
    assert runs["auto"]["team"]["shrinks"] >= 1, runs
    assert runs["fixed"]["team"]["shrinks"] == 0, runs
    # The full team's helpers (full - 1 of them) are the difference.
    assert runs["fixed"]["threads"] - runs["auto"]["threads"] == runs["fixed"]["full"] - 1, runs


def skip_if_the_machine_stayed_busy(result):
    if not result["quiet"]["grows"] and result["quiet"]["others_load"] > 0.25:
        pytest.skip("other programs kept the machine busy after the neighbours left (others_load "
                    f"{result['quiet']['others_load']:.2f}): the team rightly stayed small")


def test_team_grows_back_to_full_once_the_neighbours_leave():
    _skip_unless_governor_can_see_the_whole_machine()
    result = loaded_training(loaded_s=10, quiet_s=5)
    if result["full"] < 2:
        pytest.skip("the team has one thread already: nothing to shrink")
    assert result["shrunk_at"] is not None, result
    skip_if_the_machine_stayed_busy(result)
    assert result["quiet"]["grows"] == 1, result
    assert result["quiet"]["threads"] == result["full"] == result["threads_at_end"]


def test_grows_back_only_to_what_torch_set_num_threads_asked_for_while_shrunk():
    # The user asks for one thread while the governor holds the team at one: growing back
    # must not go past it.
    _skip_unless_governor_can_see_the_whole_machine()
    result = loaded_training(loaded_s=10, quiet_s=2, set_at_shrink=1)
    if result["full"] < 2:
        pytest.skip("the team has one thread already: nothing to shrink")
    assert result["shrunk_at"] is not None, result
    assert result["quiet"]["grows"] == 0, result  # back to one thread is no growth
    assert result["quiet"]["threads"] == 1 and result["threads_at_end"] == 1, result


def test_fixed_keeps_the_team_whatever_the_load():
    _skip_unless_governor_can_see_the_whole_machine()
    result = loaded_training(loaded_s=1.5, env={"TORCH_TPU_HOST_TEAM": "fixed"})
    team = result["loaded"]
    assert team["policy"] == "fixed"
    assert team["shrinks"] == 0 and team["grows"] == 0
    assert team["threads"] == result["full"]
    # It still samples: the load that would have shrunk an auto team was seen.
    assert team["others_load"] >= 0.5, result


def test_one_thread_asked_for_stays_one_thread():
    _skip_unless_governor_can_see_the_whole_machine()
    result = loaded_training(loaded_s=1.5, quiet_s=1, threads=1)
    assert result["full"] == 1
    for team in (result["loaded"], result["quiet"]):
        assert team["shrinks"] == 0 and team["grows"] == 0  # nothing to shrink, never above 1
        assert team["threads"] == 1
    assert result["threads_at_end"] == 1


def test_unknown_policy_warns_naming_the_variable_and_values():
    code = ("import warnings\nwarnings.simplefilter('always')\nimport torch, torch_tpu\n"
            "print(torch_tpu.metrics()['host_team']['policy'])")
    result = run_python(code, env={"TORCH_TPU_HOST_TEAM": "bogus"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["auto"]
    assert ("TORCH_TPU_HOST_TEAM='bogus' is not understood (expected 'auto' or 'fixed'); "
            "using 'auto'") in result.stderr


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_deterministic_algorithms_make_reductions_reproducible(mode):
    # A layer norm's weight gradient sums 128,000 rows in one chunk per thread: the kernel
    # rounds differently when a worker runs it (one thread) than when the waiting main thread
    # takes it over (its team). Under torch.use_deterministic_algorithms(True) every kernel runs
    # on one thread: every run gives the same bits, those of CPU's one-thread kernel.
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(128000, 5, generator=generator)
    grad = torch.randn(128000, 5, generator=generator)
    norm = torch.nn.LayerNorm(5)

    def weight_grad(device):
        module = norm.to(device)
        inputs = x.to(device).requires_grad_()
        return torch.autograd.grad(module(inputs), module.weight, grad.to(device))[0].cpu()

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        one_thread = weight_grad("cpu")
    finally:
        torch.set_num_threads(threads)
    torch_tpu.set_mode(mode)
    torch.use_deterministic_algorithms(True)
    try:
        runs = [weight_grad("tpu") for _ in range(8)]
    finally:
        torch.use_deterministic_algorithms(False)
    for run in runs:
        assert torch.equal(run, one_thread), (run - one_thread).abs().max()
