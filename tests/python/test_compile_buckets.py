"""torch.compile with dynamic shapes on tpu: a graph with symbolic sizes runs padded to bucket
sizes (the next power of two), so a sweep of lengths compiles a program per bucket, not per
length; results equal CPU's in every mode, through the masks that keep padding out of sums,
means, maxima, softmaxes, matrix products and gradients. Graphs whose ops would mix padding into
valid results run unpadded, counted with the reason and warned about."""

import copy
import math
import warnings

import pytest
import torch
import torch._dynamo
import torch.nn.functional as F

from conftest import assert_tpu_close, cpu_and_tpu, run_python_ok
from torch_tpu.compiler import compile_metrics, reset_compile_metrics
from torch_tpu.demo.llama import Llama, LlamaConfig


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def programs_bound(longest: int) -> int:
    """Buckets 2, 4, ... up to `longest`, plus the graph Dynamo specializes for size 1."""
    return math.ceil(math.log2(longest)) + 1


def test_a_length_sweep_compiles_a_program_per_bucket_and_equals_cpu(mode):
    def norm_rows(x):
        return F.layer_norm(x, x.shape[-1:]) * 2

    compiled = torch.compile(norm_rows, backend="tpu", dynamic=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for length in range(1, 41):
            x_cpu, x = cpu_and_tpu(length, 16, seed=length)
            assert_tpu_close(compiled(x), norm_rows(x_cpu))
    assert not [w for w in caught if "distinct shapes" in str(w.message)]
    counts = compile_metrics()
    # The rows are padded; the width cannot be (the norm is over it), and never changes.
    assert counts["bucketed_graphs"] == 1
    assert counts["shape_specializations"] <= programs_bound(40)  # 7 for 40 lengths


def test_reductions_softmax_and_products_over_the_padded_dimension_equal_cpu(mode):
    def mixes_rows(x):
        weights = x.softmax(0)
        return torch.cat([(weights * x).sum(0), x.mean(0), x.amax(0), x.amin(0),
                          (x.t() @ x).flatten(), x.logsumexp(0), x.argmax(0).float()])

    compiled = torch.compile(mixes_rows, backend="tpu", dynamic=True)
    for length in (2, 3, 5, 7, 8, 13):
        # Negative inputs: a zero in the padding would beat every valid row's maximum.
        x_cpu, x = cpu_and_tpu(length, 6, seed=length, low=-3.0, high=-0.5)
        assert_tpu_close(compiled(x), mixes_rows(x_cpu))
    counts = compile_metrics()
    assert counts["bucketed_graphs"] == 1 and counts["unbucketable_graphs"] == 0
    assert counts["shape_specializations"] == 4  # buckets 2, 4, 8 (for 5, 7 and 8) and 16


def decoder(seed=0):
    torch.manual_seed(seed)
    return Llama(LlamaConfig(n_layers=1, max_seq_len=64))


def token_batches(lengths, batch=2, vocab=256):
    generator = torch.Generator().manual_seed(1)
    return [(torch.randint(0, vocab, (batch, n), generator=generator),
             torch.randint(0, vocab, (batch, n), generator=generator)) for n in lengths]


def test_a_decoders_next_token_logits_over_a_length_sweep_equal_cpu(mode):
    cpu = decoder()
    tpu = copy.deepcopy(cpu).to("tpu")

    def next_token_logits(model, tokens):
        return model(tokens)[:, -1]  # the last *actual* position, not the padded one

    compiled = torch.compile(lambda tokens: next_token_logits(tpu, tokens), backend="tpu",
                             dynamic=True)
    lengths = list(range(3, 34, 3))
    with torch.no_grad():
        for tokens, _ in token_batches(lengths):
            assert_tpu_close(compiled(tokens.to("tpu")), next_token_logits(cpu, tokens),
                             rtol=1e-4, atol=1e-4)
    counts = compile_metrics()
    assert counts["bucketed_graphs"] == 1
    assert counts["shape_specializations"] == 5  # buckets 4, 8, 16, 32 and 64 (the table's end)


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_a_decoders_training_step_over_a_length_sweep_equals_cpu(mode):
    cpu = decoder()
    tpu = copy.deepcopy(cpu).to("tpu")

    def loss_of(model, tokens, targets):
        return F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten())

    compiled = torch.compile(lambda t, y: loss_of(tpu, t, y), backend="tpu", dynamic=True)
    lengths = [3, 5, 6, 9, 12, 17]
    for tokens, targets in token_batches(lengths):
        for model in (cpu, tpu):
            model.zero_grad(set_to_none=True)
        expected = loss_of(cpu, tokens, targets)
        expected.backward()
        loss = compiled(tokens.to("tpu"), targets.to("tpu"))
        loss.backward()
        assert_tpu_close(loss, expected, rtol=1e-4, atol=1e-5)
        for (name, p_cpu), p_tpu in zip(cpu.named_parameters(), tpu.parameters()):
            assert_tpu_close(p_tpu.grad, p_cpu.grad, rtol=1e-3, atol=1e-5)
    counts = compile_metrics()
    assert counts["bucketed_graphs"] == 1 and counts["unbucketable_graphs"] == 0
    # Forward and backward programs for buckets 4, 8, 16, 32: two per bucket.
    assert counts["shape_specializations"] == 2 * 4


def test_mark_dynamic_buckets_the_marked_dimension():
    def scaled_sum(x):
        return (x * 3).sum(1)

    compiled = torch.compile(scaled_sum, backend="tpu")
    for length in (5, 6, 7, 9):
        x_cpu, x = cpu_and_tpu(4, length, seed=length)
        torch._dynamo.mark_dynamic(x, 1)
        assert_tpu_close(compiled(x), scaled_sum(x_cpu))
    counts = compile_metrics()
    assert counts["bucketed_graphs"] == 1
    assert counts["shape_specializations"] == 2  # buckets 8 and 16


def test_attention_without_a_causal_mask_gets_the_padded_keys_masked():
    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v)

    compiled = torch.compile(attend, backend="tpu", dynamic=True)
    for length in (3, 5, 6, 9):
        cpu = [torch.randn(1, 2, length, 8, generator=torch.Generator().manual_seed(k))
               for k in range(3)]
        assert_tpu_close(compiled(*[t.to("tpu") for t in cpu]), attend(*cpu))
    counts = compile_metrics()
    assert counts["bucketed_graphs"] == 1 and counts["unbucketable_graphs"] == 0
    assert counts["shape_specializations"] == 3  # buckets 4, 8 and 16


def test_random_numbers_over_a_padded_dimension_run_unpadded_and_say_why():
    # Padding would change which numbers each position draws: such a graph runs per shape,
    # drawing exactly what eager tpu code draws from the same seed.
    def noisy(x):
        return x * torch.rand_like(x)

    compiled = torch.compile(noisy, backend="tpu", dynamic=True)
    with pytest.warns(UserWarning, match="cannot run padded to bucket sizes .*random"):
        for length in range(2, 9):
            _, x = cpu_and_tpu(length, 4, seed=length)
            torch.manual_seed(length)
            expected = noisy(x).cpu()
            torch.manual_seed(length)
            assert_tpu_close(compiled(x), expected, rtol=0, atol=0)
    counts = compile_metrics()
    assert counts["bucketed_graphs"] == 0 and counts["unbucketable_graphs"] >= 1
    assert any("random" in reason for reason in counts["unbucketable_reasons"])


@pytest.mark.parametrize("train", [False, True], ids=["forward", "training"])
def test_a_hugging_face_decoder_with_a_padding_mask_over_a_length_sweep_equals_cpu(train):
    from transformers import AutoConfig, AutoModelForCausalLM
    config = AutoConfig.for_model("llama", vocab_size=128, hidden_size=32, intermediate_size=64,
                                  num_hidden_layers=2, num_attention_heads=4,
                                  num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    cpu = AutoModelForCausalLM.from_config(config).train(train)
    tpu = copy.deepcopy(cpu).to("tpu")

    def run(model, ids, mask):
        out = model(input_ids=ids, attention_mask=mask, labels=ids if train else None)
        return out.loss if train else out.logits

    compiled = torch.compile(lambda ids, mask: run(tpu, ids, mask), backend="tpu", dynamic=True)
    generator = torch.Generator().manual_seed(1)
    for length in (3, 5, 7, 9, 12):
        ids = torch.randint(0, 128, (2, length), generator=generator)
        mask = torch.ones_like(ids)
        mask[0, :2] = 0  # left padding: an additive mask reaches the attention
        for model in (cpu, tpu):
            model.zero_grad(set_to_none=True)
        with torch.set_grad_enabled(train):
            expected = run(cpu, ids, mask)
            actual = compiled(ids.to("tpu"), mask.to("tpu"))
        assert_tpu_close(actual, expected, rtol=1e-4, atol=1e-5)
        if train:
            expected.backward()
            actual.backward()
            for p_cpu, p_tpu in zip(cpu.parameters(), tpu.parameters()):
                assert_tpu_close(p_tpu.grad, p_cpu.grad, rtol=1e-3, atol=1e-5)
    counts = compile_metrics()
    assert counts["bucketed_graphs"] == 1 and counts["unbucketable_graphs"] == 0
    # Buckets 4, 8 and 16 (a forward and a backward program each when training).
    assert counts["shape_specializations"] == (6 if train else 3)


def test_a_graph_writing_its_input_in_place_is_not_padded():
    def bump(x):
        x.add_(1)
        return x * 2

    compiled = torch.compile(bump, backend="tpu", dynamic=True)
    for length in (3, 5):
        x_cpu, x = cpu_and_tpu(length, 4, seed=length)
        out = compiled(x)
        expected = bump(x_cpu)
        assert_tpu_close(out, expected)
        assert_tpu_close(x, x_cpu)  # the write reached the caller's tensor
    counts = compile_metrics()
    assert counts["bucketed_graphs"] == 0
    assert any("in place" in reason for reason in counts["unbucketable_reasons"])


def test_a_decoder_length_sweep_on_the_pjrt_runtime_compiles_per_bucket_and_equals_cpu():
    out = run_python_ok("""
import copy, torch, torch_tpu
from torch_tpu.compiler import compile_metrics
from torch_tpu.demo.llama import Llama, LlamaConfig
torch.manual_seed(0)
cpu = Llama(LlamaConfig(n_layers=1, max_seq_len=64))
tpu = copy.deepcopy(cpu).to("tpu")
compiled = torch.compile(lambda t: tpu(t)[:, -1], backend="tpu", dynamic=True)
generator = torch.Generator().manual_seed(1)
worst = 0.0
with torch.no_grad():
    for n in range(3, 20, 2):
        tokens = torch.randint(0, 256, (2, n), generator=generator)
        got = compiled(tokens.to("tpu")).cpu()
        worst = max(worst, (got - cpu(tokens)[:, -1]).abs().max().item())
counts = compile_metrics()
print(worst, counts["bucketed_graphs"], counts["shape_specializations"],
      len(torch_tpu.metrics()["fallbacks"]))
""", env={"TORCH_TPU_RUNTIME": "pjrt"}, timeout=600)
    worst, bucketed, programs, fallbacks = out.strip().splitlines()[-1].split()
    assert float(worst) < 1e-4
    assert int(bucketed) == 1 and int(programs) == 4  # buckets 4, 8, 16, 32 for lengths 3..19
    assert fallbacks == "0"  # the masks and the picked position run on the device
