"""torch.compile on tpu: ``backend="tpu"`` and the default backend, every execution mode, against
PyTorch's CPU results (and eager tpu); graph breaks; the program cache shared with fused eager
mode; compile and recompile counts; and that CPU's torch.compile is left alone."""

import copy
import json
import sys
from pathlib import Path

import pytest
import torch
import torch._dynamo
import torch.nn.functional as F

import torch_tpu
from conftest import assert_tpu_close, cpu_and_tpu, run_python_ok
from torch_tpu.compiler import compile_metrics, reset_compile_metrics
from torch_tpu.demo.llama import Llama, LlamaConfig
from torch_tpu.demo.train import make_batch

REPO = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64),
        torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))


class Trainer:
    """AdamW steps of `model` on `batches` (each on the model's device), the forward and loss
    compiled for tpu when `compiled`; `losses` keeps each step's loss."""

    def __init__(self, model, batches, compiled):
        self.model, self.batches, self.losses = model, batches, []
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)

        def loss_of(x, y):
            return F.cross_entropy(model(x), y)

        self.step_loss = torch.compile(loss_of, backend="tpu") if compiled else loss_of

    def train(self, steps):
        for k in range(steps):
            x, y = self.batches[k % len(self.batches)]
            loss = self.step_loss(x, y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.losses.append(loss.detach())
            loss.item()  # a sync point each step, as a training loop's logging makes
        return self

    def results(self):
        """Losses and parameters, on CPU."""
        return ([loss.cpu() for loss in self.losses],
                [p.detach().cpu() for p in self.model.parameters()])


def mlp_batches(device, count=3):
    generator = torch.Generator().manual_seed(1)
    batches = [(torch.randn(16, 32, generator=generator),
                torch.randint(0, 10, (16,), generator=generator)) for _ in range(count)]
    return [(x.to(device), y.to(device)) for x, y in batches]


def test_compiled_mlp_forward_equals_cpu_and_eager_tpu(mode):
    model_cpu = mlp()
    model = copy.deepcopy(model_cpu).tpu()
    x_cpu, x = cpu_and_tpu(16, 32)
    compiled = torch.compile(model, backend="tpu")
    out = compiled(x)
    assert out.device.type == "tpu"
    assert_tpu_close(out, model_cpu(x_cpu))
    torch.testing.assert_close(out.cpu(), model(x).cpu())
    assert compile_metrics()["graphs_compiled"] == 1


def test_compiled_mlp_training_steps_equal_cpu(mode):
    model_cpu = mlp()
    model = copy.deepcopy(model_cpu).tpu()
    losses_cpu, params_cpu = Trainer(model_cpu, mlp_batches("cpu"), compiled=False).train(4).results()
    losses, params = Trainer(model, mlp_batches("tpu"), compiled=True).train(4).results()
    torch.testing.assert_close(losses, losses_cpu)
    torch.testing.assert_close(params, params_cpu)
    counts = compile_metrics()
    # One Dynamo graph, split by aot_autograd into a forward and a backward graph.
    assert counts["graphs_compiled"] == 1 and counts["aten_graphs"] == 2
    assert counts["recompiles"] == 0
    assert counts["graph_runs"] == 8


def test_a_steady_training_loop_compiles_nothing_new_and_hits_the_program_cache():
    torch_tpu.set_mode("fused")
    trainer = Trainer(mlp().tpu(), mlp_batches("tpu"), compiled=True)
    trainer.train(3)  # warm-up: Dynamo traces once; the optimizer creates its state in step 1
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()
    trainer.train(6)
    fusion = torch_tpu.metrics()["fusion"]
    assert fusion["cache_misses"] == 0, fusion
    assert fusion["cache_hits"] > 0, fusion
    assert fusion["flushes"].get("compiled_graph", 0) == 12  # a forward and a backward a step
    counts = torch_tpu.metrics()["compile"]  # reset with the other counters after warm-up
    assert counts["graphs_compiled"] == 0 and counts["recompiles"] == 0
    assert counts["graph_runs"] == 12


def test_a_graph_fused_eager_mode_planned_is_a_cache_hit():
    torch_tpu.set_mode("fused")
    x_cpu, x = cpu_and_tpu(64, 64)
    torch.tpu.synchronize()  # the copy to tpu is a program of its own

    def pointwise(t):
        return torch.relu(t * 2.0 + 1.0)

    eager = pointwise(x)
    torch_tpu._C._flush_all("test")  # the eager ops as one program, as the graph will be
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()
    compiled = torch.compile(pointwise, backend="tpu")(x)
    fusion = torch_tpu.metrics()["fusion"]  # before any copy to the host plans its own program
    assert fusion["flushes"] == {"compiled_graph": 1}, fusion
    assert fusion["cache_hits"] == 1 and fusion["cache_misses"] == 0, fusion
    assert_tpu_close(compiled, pointwise(x_cpu))
    torch.testing.assert_close(compiled.cpu(), eager.cpu())


def test_graph_breaks_run_compiled_and_eager_pieces_correctly(mode):
    def with_a_break(x, w):
        h = torch.tanh(x @ w)
        if h.sum().item() > 0:  # data-dependent: Dynamo breaks the graph here
            h = h * 2
        else:
            h = h - 1
        return F.softmax(h, dim=-1)

    x_cpu, x = cpu_and_tpu(8, 16)
    w_cpu, w = cpu_and_tpu(16, 16, seed=1)
    compiled = torch.compile(with_a_break, backend="tpu")
    assert_tpu_close(compiled(x, w), with_a_break(x_cpu, w_cpu))
    assert_tpu_close(compiled(-x, w), with_a_break(-x_cpu, w_cpu))
    explanation = torch._dynamo.explain(with_a_break)(x, w)
    assert explanation.graph_break_count >= 1
    assert explanation.graph_count >= 2


def test_recompiles_are_counted_with_the_guard_that_failed():
    def scaled(x):
        return x * 3 + 1

    compiled = torch.compile(scaled, backend="tpu", dynamic=False)
    x_cpu, x = cpu_and_tpu(4, 8)
    assert_tpu_close(compiled(x), scaled(x_cpu))
    assert_tpu_close(compiled(x), scaled(x_cpu))
    assert compile_metrics()["recompiles"] == 0
    y_cpu, y = cpu_and_tpu(4, 8, dtype=torch.float64)
    assert_tpu_close(compiled(y), scaled(y_cpu))
    counts = compile_metrics()
    assert counts["graphs_compiled"] == 2 and counts["recompiles"] == 1
    assert "dtype" in counts["recompile_reasons"][0] or "float" in counts["recompile_reasons"][0]


def test_a_float_argument_dynamo_makes_an_input_equals_cpu(mode):
    # After a recompile Dynamo passes a changed Python float as a 0-dim CPU float64 tensor that
    # the graph converts on CPU; those CPU temporaries die while the graph is still recorded,
    # and a later result's storage must not be taken for theirs (Llama's rms_norm_eps did this).
    def rms(x, eps):
        return torch.rsqrt(x * x + eps) * x

    compiled = torch.compile(rms, backend="tpu", fullgraph=True)
    x_cpu, x = cpu_and_tpu(8, 16)
    for eps in (1.0, 1e-6, 1e-5, 0.5):
        assert_tpu_close(compiled(x, eps), rms(x_cpu, eps))
    assert compile_metrics()["recompiles"] == 1  # the float became an input once, then no more


def test_explain_recompiles_prints_the_reason():
    stderr_reasons = run_python_ok(
        "import sys, torch, torch_tpu\n"
        "f = torch.compile(lambda x: x + 1, backend='tpu', dynamic=False)\n"
        "f(torch.ones(3, device='tpu')); f(torch.ones(3, device='tpu', dtype=torch.float64))\n"
        "torch.tpu.synchronize()\n"
        "print(torch_tpu.compiler.compile_metrics()['recompiles'])\n",
        env={"TORCH_TPU_EXPLAIN_RECOMPILES": "1", "PYTHONUNBUFFERED": "1"})
    assert stderr_reasons.strip().splitlines()[-1] == "1"


def test_errors_in_compiled_code_name_the_op(mode):
    table = torch.nn.Embedding(10, 4).tpu()
    compiled = torch.compile(lambda tokens: table(tokens).sum(), backend="tpu")
    bad = torch.tensor([1, 12], device="tpu")
    with pytest.raises(RuntimeError, match="aten::.*index out of range"):
        compiled(bad).item()


def test_debug_mode_raises_a_compiled_graphs_error_at_the_call_naming_the_users_line():
    torch_tpu.set_mode("debug")
    table = torch.nn.Embedding(10, 4).tpu()

    def lookup(tokens):
        return table(tokens).sum()  # the line the error names

    compiled = torch.compile(lookup, backend="tpu")
    line = lookup.__code__.co_firstlineno + 1
    with pytest.raises(RuntimeError, match="index out of range") as raised:
        compiled(torch.tensor([1, 12], device="tpu"))  # no sync: Debug raises here
    assert f"test_compile.py:{line} in lookup" in str(raised.value)


def demo_model_and_batch(device):
    config = LlamaConfig(dim=64, n_layers=2, n_heads=4, hidden_dim=172, max_seq_len=32)
    torch.manual_seed(0)
    model = Llama(config)
    tokens, targets = make_batch(torch.Generator().manual_seed(1), config, 4, 16)
    return model.to(device), tokens.to(device), targets.to(device)


@pytest.mark.parametrize("runtime_mode", ["strict", "fused"])
def test_compiled_demo_decoder_forward_and_training_step_equal_cpu(runtime_mode):
    torch_tpu.set_mode(runtime_mode)
    model_cpu, tokens_cpu, targets_cpu = demo_model_and_batch("cpu")
    model = copy.deepcopy(model_cpu).tpu()
    tokens, targets = tokens_cpu.tpu(), targets_cpu.tpu()
    compiled = torch.compile(model, backend="tpu")
    logits, loss = compiled(tokens, targets)
    logits_cpu, loss_cpu = model_cpu(tokens_cpu, targets_cpu)
    assert_tpu_close(logits, logits_cpu, atol=2e-5, rtol=1e-4)
    assert_tpu_close(loss, loss_cpu, atol=2e-5, rtol=1e-4)
    loss.backward()
    loss_cpu.backward()
    for (name, p), p_cpu in zip(model.named_parameters(), model_cpu.parameters()):
        assert_tpu_close(p.grad, p_cpu.grad, atol=5e-5, rtol=1e-3, msg=lambda m, n=name: f"{n}: {m}")
    # Eager tpu gives the same forward.
    _, eager_loss = model(tokens, targets)
    torch.testing.assert_close(loss.cpu(), eager_loss.cpu(), atol=2e-5, rtol=1e-4)


def test_device_interface_answers_for_the_tpu_chips():
    from torch._dynamo.device_interface import get_interface_for_device
    interface = get_interface_for_device("tpu")
    assert interface.device_count() == torch.tpu.device_count()
    assert interface.is_available()
    assert interface.current_device() == torch.tpu.current_device()
    assert interface.get_device_properties(0).total_memory > 0
    interface.synchronize()


def test_default_backend_compiles_tpu_graphs_in_a_fresh_process():
    out = run_python_ok(
        "import torch\n"
        "model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())\n"
        "x = torch.randn(4, 8)\n"
        "expected = model(x)\n"
        "compiled = torch.compile(model.to('tpu'))\n"
        "got = compiled(x.to('tpu')).cpu()\n"
        "torch.testing.assert_close(got, expected)\n"
        "import torch_tpu\n"
        "print(torch_tpu.compiler.compile_metrics()['graphs_compiled'])\n")
    assert out.strip().splitlines()[-1] == "1"


def test_cpu_torch_compile_still_goes_to_inductor_after_import():
    out = run_python_ok(
        "import torch, torch_tpu\n"
        "from torch._dynamo.utils import counters\n"
        "f = torch.compile(lambda x: torch.sin(x) * 2)\n"
        "x = torch.randn(16)\n"
        "torch.testing.assert_close(f(x), torch.sin(x) * 2)\n"
        "print(torch_tpu.compiler.compile_metrics()['graphs_compiled'],"
        " counters['inductor']['fxgraph_cache_miss'] + counters['inductor']['fxgraph_cache_hit'])\n",
        timeout=300)
    ours, inductor_graphs = out.strip().splitlines()[-1].split()
    assert ours == "0" and int(inductor_graphs) >= 1


def test_compiled_graphs_on_the_pjrt_runtime_are_one_program_each_and_equal_cpu():
    out = run_python_ok("""
import copy, json, torch, torch_tpu
from torch_tpu.demo.llama import Llama, LlamaConfig
from torch_tpu.demo.train import make_batch

config = LlamaConfig(dim=64, n_layers=2, n_heads=4, hidden_dim=172, max_seq_len=32)
torch.manual_seed(0)
model_cpu = Llama(config)
model = copy.deepcopy(model_cpu).tpu()
tokens, targets = make_batch(torch.Generator().manual_seed(1), config, 4, 16)
compiled = torch.compile(model, backend="tpu")
optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-3) for m in (model, model_cpu)]
losses = []
for step in range(3):
    if step == 2:
        torch.tpu.synchronize()
        torch_tpu.reset_metrics()
    _, loss = compiled(tokens.tpu(), targets.tpu())
    _, loss_cpu = model_cpu(tokens, targets)
    for optimizer, l in zip(optimizers, (loss, loss_cpu)):
        l.backward()
        optimizer.step()
        optimizer.zero_grad()
    losses.append([loss.item(), loss_cpu.item()])
m = torch_tpu.metrics()
print(json.dumps({"losses": losses, "fallbacks": m["fallbacks"], "syncs": m["syncs"],
                  "flushes": m["fusion"]["flushes"], "misses": m["fusion"]["cache_misses"]}))
""", env={"TORCH_TPU_RUNTIME": "pjrt"}, timeout=300)
    result = json.loads(out.strip().splitlines()[-1])
    for tpu_loss, cpu_loss in result["losses"]:
        assert abs(tpu_loss - cpu_loss) < 1e-5
    assert result["fallbacks"] == {}
    # The forward and the backward graph: one program each, no host round trip inside.
    assert result["flushes"].get("compiled_graph") == 2 and "size_bound" not in result["flushes"]
    assert result["syncs"] == {"host_copy": 1}, result["syncs"]  # loss.item(), nothing else
    assert result["misses"] == 0


@pytest.mark.parametrize("model_type", ["llama", "bert", "vit"])
def test_compiled_hugging_face_models_forward_and_train_as_cpu(model_type):
    """Decoder, encoder and vision architectures of the Hugging Face fast tier, compiled on tpu:
    forward in eval mode and a forward + backward + AdamW step, against CPU eager (the sweep's
    harness and tolerances, conformance/hf/harness.py)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # the conformance package lives at the repository root
    from conformance.hf import harness
    record = harness.evaluate(model_type, compile_backend="tpu")
    assert record["status"] == harness.PASS, record
    assert record["train"] == harness.PASS, record
    assert compile_metrics()["graphs_compiled"] >= 2  # the eval forward, then the training one


def tiny_causal_lm(model_type):
    from transformers import AutoConfig, AutoModelForCausalLM
    sizes = {"llama": dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2,
                           max_position_embeddings=64),
             "gpt2": dict(n_embd=32, n_layer=2, n_head=4, n_positions=64)}[model_type]
    config = AutoConfig.for_model(model_type, vocab_size=128, **sizes)
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config).eval()


@pytest.mark.parametrize("model_type", ["llama", "gpt2"])
def test_static_cache_generation_compiles_once_and_equals_cpu(model_type):
    """transformers compiles a model's forward with backend="tpu" on tpu when it generates with
    a static cache: greedy tokens equal CPU's, and a second generate compiles nothing."""
    model_cpu = tiny_causal_lm(model_type)
    model = copy.deepcopy(model_cpu).tpu()
    prompt = torch.randint(0, 128, (2, 7), generator=torch.Generator().manual_seed(1))
    options = dict(max_new_tokens=8, do_sample=False, cache_implementation="static",
                   attention_mask=torch.ones_like(prompt), pad_token_id=0)
    with torch.no_grad():
        expected = model_cpu.generate(prompt, **options)
        options["attention_mask"] = options["attention_mask"].tpu()
        first = model.generate(prompt.tpu(), **options)
        compiled = compile_metrics()
        second = model.generate(prompt.tpu(), **options)
    torch.testing.assert_close(first.cpu(), expected, rtol=0, atol=0)
    torch.testing.assert_close(second.cpu(), expected, rtol=0, atol=0)
    assert compiled["graphs_compiled"] >= 1 and compiled["graph_runs"] >= 7  # the decode steps
    again = compile_metrics()
    assert again["graphs_compiled"] == compiled["graphs_compiled"] and again["recompiles"] == 0


def test_a_compiled_hugging_face_model_on_the_pjrt_runtime_forward_and_trains_as_cpu():
    out = run_python_ok(f"""
import json, sys
sys.path.insert(0, {str(REPO)!r})
from conformance.hf import harness
record = harness.evaluate("bert", compile_backend="tpu")
import torch_tpu
print(json.dumps({{"record": record, "fallbacks": torch_tpu.metrics()["fallbacks"]}}))
""", env={"TORCH_TPU_RUNTIME": "pjrt"}, timeout=300)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["record"]["status"] == "pass" and result["record"]["train"] == "pass", result
    assert result["fallbacks"] == {}, result["fallbacks"]
