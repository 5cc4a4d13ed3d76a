// The c10d names that differ between the PyTorch releases torch_tpu is built against: 2.13, the
// pinned one, and 2.11, the GPU hosts' own CUDA build (scripts/pjrt_gpu_check.sh builds there
// without downloading a PyTorch).
#pragma once

#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/version.h>

namespace torch_tpu::distributed {

#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR <= 11
// 2.11 names PREMUL_SUM's factor after NCCL and has no op type of its own for a coalesced
// reduce-scatter of tensors.
using PreMulSumSupplement = c10d::NCCLPreMulSumSupplement;
inline constexpr c10d::OpType kReduceScatterTensorCoalesced = c10d::OpType::COALESCED;
#else
using PreMulSumSupplement = c10d::PreMulSumSupplement;
inline constexpr c10d::OpType kReduceScatterTensorCoalesced =
    c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED;
#endif

}  // namespace torch_tpu::distributed
