// The cells in the order ATen's CPU path computes them (RNN.cpp's LSTMCell and GRUCell), so
// results match CPU's to rounding; the gradients follow CUDA's fused backward kernels.
#include "ops/recurrent_cells.h"

#include <type_traits>

#include <ATen/TensorOperators.h>
#include <ATen/ops/add.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros_like.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include "engine/active_executor.h"

namespace torch_tpu::ops {
namespace {

bool defined(const std::optional<at::Tensor>& tensor) { return tensor.has_value() && tensor->defined(); }

at::Tensor with_bias(const at::Tensor& gates, const std::optional<at::Tensor>& bias) {
  return defined(bias) ? gates + *bias : gates;
}

// d sigmoid(x) / dx from its value s.
at::Tensor sigmoid_slope(const at::Tensor& s) { return s * (1 - s); }
// d tanh(x) / dx from its value t.
at::Tensor tanh_slope(const at::Tensor& t) { return 1 - t * t; }

at::Tensor bias_gradient(const at::Tensor& grad_gates, bool has_bias) {
  return has_bias ? grad_gates.sum(0) : at::Tensor();
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell_ops(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  const auto gates = with_bias(input_gates, input_bias) + with_bias(hidden_gates, hidden_bias);
  const auto chunks = gates.chunk(4, 1);
  const at::Tensor i = at::sigmoid(chunks[0]);
  const at::Tensor f = at::sigmoid(chunks[1]);
  const at::Tensor g = at::tanh(chunks[2]);
  const at::Tensor o = at::sigmoid(chunks[3]);
  const at::Tensor cy = f * cx + i * g;
  const at::Tensor hy = o * at::tanh(cy);
  return {hy, cy, at::cat({i, f, g, o}, 1)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell_backward_ops(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  if (!defined(grad_hy) && !defined(grad_cy)) return {};
  const auto gates = workspace.chunk(4, 1);
  const at::Tensor &i = gates[0], &f = gates[1], &g = gates[2], &o = gates[3];
  // The cell state's gradient: through hy = o * tanh(cy), plus what reached cy directly.
  at::Tensor d_cy = defined(grad_cy) ? *grad_cy : at::zeros_like(cy);
  at::Tensor d_o = at::zeros_like(o);
  if (defined(grad_hy)) {
    const at::Tensor tanh_cy = at::tanh(cy);
    d_cy = d_cy + *grad_hy * o * tanh_slope(tanh_cy);
    d_o = *grad_hy * tanh_cy * sigmoid_slope(o);
  }
  const at::Tensor grad_gates = at::cat(
      {d_cy * g * sigmoid_slope(i), d_cy * cx * sigmoid_slope(f), d_cy * i * tanh_slope(g), d_o}, 1);
  return {grad_gates, d_cy * f, bias_gradient(grad_gates, has_bias)};
}

std::tuple<at::Tensor, at::Tensor> gru_cell_ops(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  const auto in = with_bias(input_gates, input_bias).chunk(3, 1);
  const auto hidden = with_bias(hidden_gates, hidden_bias).chunk(3, 1);
  const at::Tensor r = at::sigmoid(in[0] + hidden[0]);
  const at::Tensor z = at::sigmoid(in[1] + hidden[1]);
  const at::Tensor n = at::tanh(in[2] + hidden[2] * r);
  const at::Tensor hy = (hx - n) * z + n;
  return {hy, at::cat({r, z, n, hx, hidden[2]}, 1)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> gru_cell_backward_ops(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  const auto saved = workspace.chunk(5, 1);
  const at::Tensor &r = saved[0], &z = saved[1], &n = saved[2], &hx = saved[3], &hn = saved[4];
  const at::Tensor d_n = grad_hy * (1 - z) * tanh_slope(n);
  const at::Tensor d_r = d_n * hn * sigmoid_slope(r);
  const at::Tensor d_z = grad_hy * (hx - n) * sigmoid_slope(z);
  const at::Tensor grad_input_gates = at::cat({d_r, d_z, d_n}, 1);
  const at::Tensor grad_hidden_gates = at::cat({d_r, d_z, d_n * r}, 1);
  return {grad_input_gates, grad_hidden_gates, grad_hy * z,
          bias_gradient(grad_input_gates, has_bias), bias_gradient(grad_hidden_gates, has_bias)};
}

// The one-op cell named `name` (torch_tpu::lstm_cell, ...), with the signature of `Kernel`.
template <typename Kernel>
c10::TypedOperatorHandle<Kernel> one_op_cell(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Kernel>();
}

// A cell forward: on the host runtime one queued op of our own, `name`, whose CPU kernel is
// `on_host`; on an executor with opaque buffers (PJRT) `on_host`'s ops, each lowered there.
template <auto& on_host, typename... Args>
auto one_op_or_composite(const char* name, const Args&... args) {
  if (engine::buffers_are_opaque()) return on_host(args...);
  static const auto cell = one_op_cell<std::remove_reference_t<decltype(on_host)>>(name);
  return cell.call(args...);
}

// Without a bias the cell's bias gradients are undefined, as ATen's are.
at::Tensor if_bias(bool has_bias, at::Tensor grad) { return has_bias ? std::move(grad) : at::Tensor(); }

}  // namespace

const char* const kLstmCellSchema =
    "torch_tpu::lstm_cell(Tensor input_gates, Tensor hidden_gates, Tensor cx, "
    "Tensor? input_bias=None, Tensor? hidden_bias=None) -> (Tensor, Tensor, Tensor)";
const char* const kLstmCellBackwardSchema =
    "torch_tpu::lstm_cell_backward(Tensor? grad_hy, Tensor? grad_cy, Tensor cx, Tensor cy, "
    "Tensor workspace) -> (Tensor, Tensor, Tensor)";
const char* const kGruCellSchema =
    "torch_tpu::gru_cell(Tensor input_gates, Tensor hidden_gates, Tensor hx, "
    "Tensor? input_bias=None, Tensor? hidden_bias=None) -> (Tensor, Tensor)";
const char* const kGruCellBackwardSchema =
    "torch_tpu::gru_cell_backward(Tensor grad_hy, Tensor workspace) -> "
    "(Tensor, Tensor, Tensor, Tensor, Tensor)";

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell_on_host(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  return lstm_cell_ops(input_gates, hidden_gates, cx, input_bias, hidden_bias);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell_backward_on_host(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace) {
  return lstm_cell_backward_ops(grad_hy, grad_cy, cx, cy, workspace, /*has_bias=*/true);
}

std::tuple<at::Tensor, at::Tensor> gru_cell_on_host(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  return gru_cell_ops(input_gates, hidden_gates, hx, input_bias, hidden_bias);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> gru_cell_backward_on_host(
    const at::Tensor& grad_hy, const at::Tensor& workspace) {
  return gru_cell_backward_ops(grad_hy, workspace, /*has_bias=*/true);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  return one_op_or_composite<lstm_cell_on_host>("torch_tpu::lstm_cell", input_gates, hidden_gates,
                                                cx, input_bias, hidden_bias);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  if (!defined(grad_hy) && !defined(grad_cy)) return {};
  if (engine::buffers_are_opaque()) {
    return lstm_cell_backward_ops(grad_hy, grad_cy, cx, cy, workspace, has_bias);
  }
  static const auto cell =
      one_op_cell<decltype(lstm_cell_backward_on_host)>("torch_tpu::lstm_cell_backward");
  auto [grad_gates, grad_cx, grad_bias] = cell.call(grad_hy, grad_cy, cx, cy, workspace);
  return {grad_gates, grad_cx, if_bias(has_bias, grad_bias)};
}

std::tuple<at::Tensor, at::Tensor> fused_gru_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  return one_op_or_composite<gru_cell_on_host>("torch_tpu::gru_cell", input_gates, hidden_gates, hx,
                                               input_bias, hidden_bias);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  if (engine::buffers_are_opaque()) return gru_cell_backward_ops(grad_hy, workspace, has_bias);
  static const auto cell =
      one_op_cell<decltype(gru_cell_backward_on_host)>("torch_tpu::gru_cell_backward");
  auto [grad_input, grad_hidden, grad_hx, grad_input_bias, grad_hidden_bias] =
      cell.call(grad_hy, workspace);
  return {grad_input, grad_hidden, grad_hx, if_bias(has_bias, grad_input_bias),
          if_bias(has_bias, grad_hidden_bias)};
}

}  // namespace torch_tpu::ops
