// The fused LSTM and GRU cells. ATen's RNN code (nn.LSTM, nn.GRU, nn.LSTMCell, nn.GRUCell) sends
// tpu tensors, as it sends CUDA ones, to the fused cell ops, which only CUDA implements; these
// kernels compute the same cells, and their gradients (recurrent_cells.cpp). Each cell is a
// dozen pointwise ops, and a layer runs one cell per time step: on the host runtime a cell
// therefore runs as one queued op, our own `torch_tpu::lstm_cell` (and friends), whose CPU
// kernel computes the whole cell on the host's view of chip memory; on the PJRT runtime its
// ops are lowered one by one. Registered in ops/registration.cpp.
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

// The schemas of the one-op cells, and their kernels for CPU tensors (the cells above, which
// also serve for Meta tensors: their ops' Meta kernels give the output shapes). The backward
// ops always return the bias gradients; the tpu kernels above drop them without a bias.
extern const char* const kLstmCellSchema;
extern const char* const kLstmCellBackwardSchema;
extern const char* const kGruCellSchema;
extern const char* const kGruCellBackwardSchema;
std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell_on_host(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias);
std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell_backward_on_host(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace);
std::tuple<at::Tensor, at::Tensor> gru_cell_on_host(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> gru_cell_backward_on_host(
    const at::Tensor& grad_hy, const at::Tensor& workspace);

}  // namespace torch_tpu::ops
