// The math of the fused pointwise ops (PointwiseOpcode, executors/host/fusible_op.h), one row
// per opcode: its operands, how it takes alpha, which layouts it may run on, the interpreter's
// code (executors/host/pointwise_loop.h) and the code generated kernels get
// (executors/host/pointwise_codegen.h). Both must give Strict's bits (ATen's CPU kernels',
// every result rounded to its dtype), so they read one row, and the scalar helpers below are
// compiled into the interpreter and pasted into every generated kernel from one definition. A
// new op is an enumerator and a row (pointwise_ops.cpp checks at compile time that the rows
// follow the enum and that their code templates are well formed).
#pragma once

#include <cstdint>
#include <span>

#include "executors/host/fusible_op.h"
#include "executors/host/vector_math.h"

namespace torch_tpu::executors::host {

// Floats per interpreter block: a handful of blocks stay in a core's L1/L2 cache.
constexpr int64_t kPointwiseBlock = 2048;
constexpr int kMaxPointwiseArity = 3;

// An operand inside a block: a register (n floats) or a constant.
struct PointwiseSource {
  const float* values = nullptr;  // null: constant
  float constant = 0.0f;
};

// One instruction on one block, as the interpreter runs it.
struct PointwiseBlock {
  float* out = nullptr;                      // n floats; may be an operand's values
  const PointwiseSource* sources = nullptr;  // one per operand
  int64_t n = 0;                             // at most kPointwiseBlock
  float alpha = 1.0f;                        // 1 when the instruction has no alpha constant
  InPlaceFn function = nullptr;              // the op's PointwiseFunction for this dtype
  bool negate = false;                       // PointwiseFunction::negated
  bool round_bfloat16 = false;               // round each result as a bf16 store would
};
using PointwiseBlockFn = void (*)(const PointwiseBlock& block);

enum class PointwiseAlpha : uint8_t {
  kNone,
  // add, sub: alpha != 1 takes the row's alpha_form (ATen computes it with an FMA).
  kOwnForm,
  // addcmul, addcdiv: one form, which reads alpha (1 when the instruction has none).
  kArgument,
};

// An array function from VectorMath that an op applies to its first operand, as ATen does.
struct PointwiseFunction {
  // What the interpreter calls, from the VectorMath of the instruction's dtype (float32's or
  // reduced precision's).
  InPlaceFn VectorMath::* interpreted = nullptr;
  // What generated kernels call, from the float32 VectorMath they get: the same function for
  // every dtype they compile (pointwise_codegen.cpp checks). Null: they compute the op inline.
  InPlaceFn VectorMath::* generated = nullptr;
  bool negated = false;  // applied to -x
};

// One way of computing an op: the interpreter's block function and the expressions generated
// kernels get, side by side so they cannot drift apart. The expressions are C++ templates with
// placeholders: {0} {1} {2} the operands (scalar code: float; vector code: vf, a constant
// broadcast with bc()), {1s} in vector code operand 1 with a constant left a float (for
// operators that take one), {alpha} the alpha constant (1.0f when absent), {f} the row's
// function's value on operand 0. No other braces.
struct PointwiseForm {
  PointwiseBlockFn interpret = nullptr;
  const char* scalar = nullptr;  // one element (a generated loop's tail)
  const char* vector = nullptr;  // kLanes elements (pointwise_codegen.cpp's prelude)
  // On operands whose innermost dim is not contiguous, ATen's kernels take their scalar loop,
  // and on contiguous ones their vector loop; the register forms compute like the vector loop.
  // A form gives the same bits either way when it is one IEEE-rounded operation (no fused
  // multiply-add, no choice between signed zeros), or for sqrt and exp the same vector
  // function in every layout (ATen copies strided operands through a buffer for them;
  // vector_math.h). Only such forms may run in clusters of strided or broadcast tensors.
  bool layout_independent = false;
};

struct PointwiseOpInfo {
  PointwiseOpcode opcode;
  const char* name;  // for errors and dumps
  int arity;         // operands: PointwiseExpression::operands.size()
  PointwiseAlpha alpha = PointwiseAlpha::kNone;
  // False: float32 instructions stay interpreted. Float32 sqrt and exp are MKL's vector
  // functions (ATen's bits): the interpreter calls them once per block, a generated loop once
  // per vector, where MKL's per-call cost (mode and dispatch) dominated: an AdamW update per
  // parameter ran 1.74-3.5 ms compiled against 0.87-1.45 ms interpreted.
  bool compiled_in_float32 = true;
  PointwiseFunction function;  // none when interpreted is null
  PointwiseForm form;
  PointwiseForm alpha_form;  // kOwnForm only

  // The form of an instruction with an alpha constant or without one.
  const PointwiseForm& form_for(bool with_alpha) const {
    return with_alpha && alpha == PointwiseAlpha::kOwnForm ? alpha_form : form;
  }
};

// The row of `opcode` (a valid enumerator other than kCount).
const PointwiseOpInfo& pointwise_op(PointwiseOpcode opcode);
// All rows, in enum order.
std::span<const PointwiseOpInfo> pointwise_ops();

// Whether an expression of `op` with this alpha carries it as a constant: only where it
// changes the result.
inline bool pointwise_takes_alpha(const PointwiseOpInfo& op, float alpha) {
  return op.alpha != PointwiseAlpha::kNone && alpha != 1.0f;
}

// --- scalar helpers of both the interpreter and generated kernels -----------------------------
// Listed once: pointwise_ops.cpp expands them as code (LINE = TORCH_TPU_POINTWISE_CODE, BLOCK =
// TORCH_TPU_POINTWISE_CODE_BLOCK), pointwise_codegen.cpp as text for its prelude
// (TORCH_TPU_POINTWISE_TEXT, TORCH_TPU_POINTWISE_TEXT_BLOCK). Stringizing keeps each single
// space and drops comments, so the kernels' text (and their on-disk cache) is what it was when
// the prelude spelled these out. LINE gives a one-line function; BLOCK((signature), (body))
// one whose body has a line of its own. NaN rules are ATen's: maximum/minimum propagate NaN,
// clamp and relu pass a NaN x through.
#define TORCH_TPU_POINTWISE_COMPARISONS(LINE) \
  LINE(inline float max_of(float x, float y) { return (x < y) ? y : x; }) \
  LINE(inline float min_of(float x, float y) { return (y < x) ? y : x; }) \
  LINE(inline float maximum(float x, float y) { return (x != x || y != y) ? __builtin_nanf("") : max_of(x, y); }) \
  LINE(inline float minimum(float x, float y) { return (x != x || y != y) ? __builtin_nanf("") : min_of(x, y); }) \
  LINE(inline float clamp(float x, float lo, float hi) { return x != x ? x : min_of(max_of(x, lo), hi); }) \
  LINE(inline float relu(float x) { return x < 0.0f ? 0.0f : x; })

// ATen's CPU kernels compute these with fused multiply-adds (GCC contracts them), in float for
// bf16/f16 operands: lerp for (s, e, w) as |w| < 0.5 ? fma(w, e - s, s) : fma(w - 1, e - s, e).
#define TORCH_TPU_POINTWISE_COMBINATIONS(LINE, BLOCK) \
  LINE(inline float addcmul(float a, float b, float c, float alpha) { return std::fma(alpha * b, c, a); }) \
  LINE(inline float addcdiv(float a, float b, float c, float alpha) { return a + (alpha * b) / c; }) \
  BLOCK((inline float lerp(float s, float e, float w)), \
        (return std::fabs(w) < 0.5f ? std::fma(w, e - s, s) : std::fma(w - 1.0f, e - s, e);))

#define TORCH_TPU_POINTWISE_CODE(...) __VA_ARGS__
#define TORCH_TPU_POINTWISE_CODE_BLOCK(signature, body) \
  TORCH_TPU_POINTWISE_CODE signature { TORCH_TPU_POINTWISE_CODE body }
#define TORCH_TPU_POINTWISE_STRINGIZE(...) #__VA_ARGS__
#define TORCH_TPU_POINTWISE_TEXT(...) #__VA_ARGS__ "\n"
#define TORCH_TPU_POINTWISE_TEXT_BLOCK(signature, body) \
  TORCH_TPU_POINTWISE_STRINGIZE signature " {\n  " TORCH_TPU_POINTWISE_STRINGIZE body "\n}\n"

}  // namespace torch_tpu::executors::host
