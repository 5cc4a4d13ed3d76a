"""nn.LSTM, nn.GRU, nn.LSTMCell and nn.GRUCell on tpu: ATen's RNN code sends tpu tensors to the
fused cell ops (as CUDA's), which the host runtime runs as one queued op per cell (the PJRT
runtime lowers the cell's ops). Outputs and every gradient equal CPU's in every mode."""

import pytest
import torch

import torch_tpu

MODELS = {
    "lstm_2_layers": (lambda: torch.nn.LSTM(10, 20, num_layers=2), (5, 3, 10), None),
    "lstm_projected_bidirectional": (
        lambda: torch.nn.LSTM(10, 20, proj_size=7, bidirectional=True, batch_first=True), (3, 5, 10), None),
    "gru_2_layers_bidirectional": (lambda: torch.nn.GRU(10, 20, num_layers=2, bidirectional=True), (5, 3, 10), None),
    "gru_without_bias": (lambda: torch.nn.GRU(10, 20, bias=False), (5, 3, 10), None),
    "lstm_without_bias": (lambda: torch.nn.LSTM(10, 20, bias=False), (5, 3, 10), None),
    "lstm_cell": (lambda: torch.nn.LSTMCell(10, 20), (3, 10), ((3, 20), (3, 20))),
    "gru_cell": (lambda: torch.nn.GRUCell(10, 20), (3, 10), (3, 20)),
}


def run(module, x, state):
    x = x.clone().requires_grad_()
    out = module(x) if state is None else module(x, state)
    first = out[0] if isinstance(out, tuple) else out
    (first.pow(2).sum() + (out[1][0].sum() if isinstance(out, tuple) else 0)).backward()
    return first, x.grad, [p.grad for p in module.parameters()]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_recurrent_layers_match_cpu_forward_and_backward(name, mode):
    make, x_shape, state_shapes = MODELS[name]
    torch.manual_seed(0)
    cpu = make()
    tpu = make()
    tpu.load_state_dict(cpu.state_dict())
    tpu = tpu.to("tpu")
    x = torch.randn(x_shape)
    if state_shapes is None:
        state_cpu = state_tpu = None
    elif isinstance(state_shapes[0], tuple):
        state_cpu = tuple(torch.randn(s) for s in state_shapes)
        state_tpu = tuple(s.to("tpu") for s in state_cpu)
    else:
        state_cpu = torch.randn(state_shapes)
        state_tpu = state_cpu.to("tpu")
    expected = run(cpu, x, state_cpu)
    got = run(tpu, x.to("tpu"), state_tpu)
    torch.testing.assert_close(got[0].cpu(), expected[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got[1].cpu(), expected[1], rtol=1e-5, atol=1e-5)
    for g, e in zip(got[2], expected[2]):
        torch.testing.assert_close(g.cpu(), e, rtol=1e-5, atol=1e-5)
    assert torch_tpu.metrics()["fallbacks"] == {}


def test_a_cell_is_one_queued_op_each_way_on_the_host_runtime():
    """A layer runs a cell per time step; as a dozen ops each, a 64-step LSTM spent its time
    issuing them. Ops per time step (measured: 3 forward, 10 backward; 15 and 40 with the
    cell as ops)."""
    lstm = torch.nn.LSTM(8, 16).to("tpu")

    def per_step(backward):
        counts = []
        for steps in (6, 12):
            x = torch.randn(steps, 2, 8, device="tpu", requires_grad=True)
            start = torch_tpu.metrics()["ops_launched"]
            out = lstm(x)[0].sum()
            issued = torch_tpu.metrics()["ops_launched"]
            out.backward()
            done = torch_tpu.metrics()["ops_launched"]
            counts.append(done - issued if backward else issued - start)
        return (counts[1] - counts[0]) / 6

    assert per_step(backward=False) <= 3
    assert per_step(backward=True) <= 10
