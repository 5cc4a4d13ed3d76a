// The fused LSTM and GRU cells. ATen's RNN code (nn.LSTM, nn.GRU, nn.LSTMCell, nn.GRUCell) sends
// tpu tensors, as it sends CUDA ones, to the fused cell ops, which only CUDA implements; these
// kernels compute the same cells, and their gradients, from tpu ops (recurrent_cells.cpp).
// Registered in ops/registration.cpp.
#pragma once

#include <optional>
#include <tuple>

#include <ATen/core/Tensor.h>

namespace torch_tpu::ops {

// Returns (hy, cy, workspace): the workspace holds the activated gates [i, f, g, o] for the
// backward.
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias);

// Returns (grad_gates, grad_cx, grad_bias); all undefined when neither gradient is.
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias);

// Returns (hy, workspace): the workspace holds [r, z, n, hx, hn] for the backward (hn with the
// hidden bias, as the reset gate scales it).
std::tuple<at::Tensor, at::Tensor> fused_gru_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias);

// Returns (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias);

}  // namespace torch_tpu::ops
