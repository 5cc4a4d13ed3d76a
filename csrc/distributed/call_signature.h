// What one rank is about to run, in a fixed-size form the ranks exchange before each collective
// (tpu_dist checks agreement the way NCCL's debug wrapper does, but always): a rank that calls a
// different collective, with another dtype or shape, or skips one, makes every rank raise an
// error naming both calls, instead of hanging or exchanging bytes of different meaning.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace torch_tpu::distributed {

struct CallSignature {
  uint64_t sequence = 0;  // collectives issued on this group so far, this one included
  c10d::OpType op = c10d::OpType::UNKNOWN;
  int64_t reduce_op = -1;  // c10d::ReduceOp::RedOpType, or -1
  int64_t root = -1;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  // The shape every rank must pass (e.g. all_gather's input). Unchecked when ranks may differ
  // (all_to_all's uneven splits).
  bool shape_checked = false;
  std::vector<int64_t> shape;
};

// The signature as an int64 CPU tensor of kEncodedSignatureWords (every rank's the same size).
constexpr int64_t kEncodedSignatureWords = 16;
at::Tensor encode(const CallSignature& signature);
CallSignature decode(const at::Tensor& encoded);

// Throws c10::DistBackendError if any rank's signature (rows of `all`, indexed by rank) differs
// from `mine`, naming this rank's call and the first mismatching rank's.
void check_agreement(const CallSignature& mine, int my_rank, const std::vector<at::Tensor>& all);

// "all_reduce(SUM) of float32[8, 4] (collective #3)".
std::string describe(const CallSignature& signature);

}  // namespace torch_tpu::distributed
