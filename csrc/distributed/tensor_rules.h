// What tpu_dist accepts and how tensors travel through the transport: NCCL's argument rules
// (with errors naming the op), views Gloo can move or reduce, PREMUL_SUM as a scaled SUM, and
// each call's cross-rank signature.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "distributed/call_signature.h"

namespace torch_tpu::distributed {

using TensorList = std::vector<at::Tensor>;

bool on_tpu(const at::Tensor& tensor);

// Checks the tensors of one call the way ProcessGroupNCCL does, with errors naming `op`: all
// dense, all on one device (one tpu, or all on CPU, which the transport then takes as is), one
// dtype, and contiguous in their memory format when on tpu. Returns whether they are on tpu.
bool check_call(const char* op, std::initializer_list<const TensorList*> groups);
void check_same_sizes(const char* op, const TensorList& tensors, c10::IntArrayRef sizes,
                      const char* what);
void check_count(const char* op, size_t count, size_t expected, const char* what);

// A view the transport can move: the tensor itself, or its bytes as laid out (never a copy:
// the transport writes into it). With `keep_rows`, dim 0 is kept (all_to_all splits count rows).
at::Tensor movable(const at::Tensor& view, bool keep_rows = false);
TensorList movable(const TensorList& views, bool keep_rows = false);
// A dense view as one flat dimension, in memory order (no copy).
at::Tensor flat(const at::Tensor& view);

// Reductions need a dtype the transport reduces; complex sums travel as pairs of reals.
void check_reducible(const char* op, const at::Tensor& tensor, const c10d::ReduceOp& reduce_op);
at::Tensor reducible(const at::Tensor& view);
TensorList reducible(const TensorList& views);

// PREMUL_SUM is SUM of inputs scaled by a factor (a number, or a one-element tensor).
struct Reduction {
  c10d::ReduceOp op;                        // what the transport runs (SUM for PREMUL_SUM)
  std::optional<double> factor;             // PREMUL_SUM's number
  std::optional<at::Tensor> factor_tensor;  // or its tensor on tpu (one of the call's inputs)
};

Reduction reduction_of(const c10d::ReduceOp& requested);
// Scales `view` by the PREMUL_SUM factor in place (`factor_view`: the factor tensor's view).
void premultiply(const Reduction& reduction, at::Tensor& view, const at::Tensor* factor_view);

// The signature the ranks must agree on: op, reduce op, root, dtype and `shaped`'s shape.
CallSignature signature_of(c10d::OpType op, const at::Tensor& shaped, int64_t reduce_op = -1,
                           int64_t root = -1, bool shape_checked = true);
// Coalesced calls: the ranks agree on the number of tensors and their total size.
CallSignature signature_of_many(c10d::OpType op, const TensorList& tensors, int64_t reduce_op = -1);

TensorList flatten(const std::vector<TensorList>& lists);

}  // namespace torch_tpu::distributed
