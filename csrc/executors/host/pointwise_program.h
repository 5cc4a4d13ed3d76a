// A fused pointwise cluster in register form (executors/host/pointwise_loop.h): the chip
// tensors it loads and stores, and one instruction per op over float "buffers". Both ways of
// running it work from this: the interpreter (one op at a time over cache-resident blocks)
// and the compiled kernel (executors/host/pointwise_codegen.h: every op per element, in
// vector registers). Built per run (addresses and scalar values change); its structure()
// says whether two runs need the same compiled code.
#pragma once

#include <cstdint>
#include <vector>

#include "executors/host/fused_cluster.h"

namespace torch_tpu::executors::host {

struct PointwiseRegister {
  const void* device_data = nullptr;
  c10::ScalarType dtype = c10::kFloat;
  // Element strides over the program's iteration shape (0 where broadcast); empty when the
  // tensor is laid out row-major over it, so a block is one contiguous range.
  std::vector<int64_t> strides;
  bool loaded = false;  // read before the cluster writes it: loaded per block
  bool stored = false;  // written and materialized: stored per block
  int buffer = -1;      // the float buffer holding it inside a block
};

struct PointwiseInstruction {
  PointwiseOpcode opcode = PointwiseOpcode::kAdd;  // its math: executors/host/pointwise_ops.h
  int output = -1;            // buffer
  std::vector<int> operands;  // per operand: buffer, or -1 for a constant
  // Per operand: the index in PointwiseProgram::constants of its value (operands that are
  // constants: scalars, clamp bounds, single-element tensors read at build time), else -1.
  std::vector<int> constant_slots;
  int alpha_slot = -1;  // ops that take alpha, alpha != 1 (pointwise_takes_alpha): its constant
  c10::ScalarType dtype = c10::kFloat;  // the output's: results are rounded to it
};

struct PointwiseProgram {
  std::vector<PointwiseRegister> registers;
  std::vector<PointwiseInstruction> instructions;
  std::vector<float> constants;  // this run's values
  int buffers = 0;               // block buffers needed (reused once a value is dead)
  std::vector<int64_t> shape;    // the iteration shape; blocks follow its row-major order
  int64_t numel = 0;
  // Some register has strides: the interpreter gathers and scatters it per block, and a
  // generated kernel runs row by row over the last dim (pointwise_codegen.h).
  bool strided = false;
  bool excess_precision = false;  // float32 intermediates instead of rounding each result

  // Everything the generated code depends on (no addresses, no constant values).
  std::vector<int32_t> structure() const;
};

// How a strided program's generated loop steps through `reg` along the last dim, in elements:
// 0 (broadcast), 1 (contiguous; also every row-major register), 2 (x[..., 0::2]) as
// compile-time constants, or -1 (another step, read at run time).
int64_t strided_step(const PointwiseRegister& reg);

// Whether a fused chain keeps float32 intermediates for bfloat16/float16 results, rounding
// only what it stores (what XLA, with its default xla_allow_excess_precision, and Inductor
// do): TORCH_TPU_FUSED_EXCESS_PRECISION=1 (read once). By default every result is rounded as
// eager stores it, so fused mode reproduces Strict bit for bit.
bool excess_precision();

// Whether the register form covers this cluster: known ops, floating dtypes, and either a flat
// plan or, for layout-independent ops only, one of strided and broadcast tensors (see the .cpp).
bool pointwise_program_supports(const ClusterPlan& plan, const std::vector<const FusibleOp*>& ops);

// Requires pointwise_program_supports().
PointwiseProgram build_pointwise_program(const ClusterPlan& plan,
                                         const std::vector<const FusibleOp*>& ops);

}  // namespace torch_tpu::executors::host
