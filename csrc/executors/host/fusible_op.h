// An op the fused loop engine can run (DeferAndFuse, DESIGN §2): a pointwise op whose outputs
// all have one shape, run on any chunk of rows of that shape by handing it views (slices of
// chip memory, or chunk-sized scratch for intermediates nothing else reads).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/intrusive_ptr.h>

#include "executors/host/tensor_snapshot.h"

namespace torch_tpu::executors::host {

// One tensor a fusible op touches, as captured when the op was recorded.
struct FusedTensor {
  const TensorSnapshot* snapshot = nullptr;   // owned by the op
  const c10::StorageImpl* storage = nullptr;  // identity, for aliasing and liveness
  int64_t offset_bytes = 0;                   // where in the storage element 0 sits
  bool written = false;
  bool read = true;  // false for an output the op only writes (its old contents do not matter)
};

// The elementwise computation of an op, for the register-level fused loop
// (executors/host/pointwise_loop.h): result = opcode(operands...), rounded to the output's dtype.
// How each is computed: executors/host/pointwise_ops.h.
enum class PointwiseOpcode : uint8_t {
  kAdd,        // a + alpha * b
  kSub,        // a - alpha * b
  kMul,        // a * b
  kDiv,        // a / b
  kNeg,
  kRelu,
  kAbs,
  kReciprocal,
  kSqrt,
  kRsqrt,
  kExp,
  kTanh,
  kSigmoid,
  kSilu,
  kMaximum,
  kMinimum,
  kClamp,      // min(max(a, lo), hi); absent bounds are +-inf
  // ATen's CPU kernels compute these three with fused multiply-adds (GCC contracts them), in
  // float for bf16/f16 operands; the register forms use the same expressions:
  kAddcmul,    // fma(alpha * b, c, a)
  kAddcdiv,    // a + (alpha * b) / c
  kLerp,       // |w| < 0.5 ? fma(w, e - s, s) : fma(w - 1, e - s, e), for (s, e, w)
  kCube,       // a * a * a, left to right (ATen's pow(a, 3) for float32)
  // Not an op: the number of opcodes. Each opcode has a row in executors/host/pointwise_ops.cpp
  // (its math), which fails to compile while one is missing.
  kCount,
};

struct PointwiseOperand {
  int tensor = -1;       // index into the op's tensors(), or -1 for a constant
  float constant = 0.0f;
};

struct PointwiseExpression {
  PointwiseOpcode opcode = PointwiseOpcode::kAdd;
  std::vector<PointwiseOperand> operands;
  float alpha = 1.0f;
  int output = -1;  // index into tensors() of the tensor written
};

class FusibleOp {
 public:
  virtual ~FusibleOp() = default;
  // Printable op name (interned), for errors and program dumps.
  virtual const char* name() const = 0;
  // The outputs' sizes: what the op iterates over.
  virtual c10::IntArrayRef iteration_shape() const = 0;
  // The chip tensors it reads and writes.
  virtual const std::vector<FusedTensor>& tensors() const = 0;
  // Runs the op's CPU kernel with `view(i)` as the CPU tensor for tensors()[i].
  virtual void run(const std::function<at::Tensor(size_t)>& view) const = 0;
  // Its computation in register form, if the fused loop knows it (else null: run() is used).
  virtual const PointwiseExpression* expression() const { return nullptr; }
  // A reduction over non-leading dims of its input (which is what it iterates): it writes one
  // result per row of dim 0, so a cluster chunked by rows may end in it (softmax's and norms'
  // sums and maxima) and later ops may read its row-shaped result.
  virtual bool reduces_rows() const { return false; }
};

}  // namespace torch_tpu::executors::host
