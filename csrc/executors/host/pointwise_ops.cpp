#include "executors/host/pointwise_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string_view>
#include <type_traits>

#include <c10/util/Exception.h>

namespace torch_tpu::executors::host {
namespace {

TORCH_TPU_POINTWISE_COMPARISONS(TORCH_TPU_POINTWISE_CODE)
TORCH_TPU_POINTWISE_COMBINATIONS(TORCH_TPU_POINTWISE_CODE, TORCH_TPU_POINTWISE_CODE_BLOCK)

// --- the interpreter's block functions -------------------------------------------------------
// One per op (a loop shape instantiated with the row's element function), each cloned for
// AVX-512, AVX2 and baseline x86-64, the rest of the interpreter being built for the baseline.
// The element function is a template argument, so it is inlined into the loop and vectorized
// with it; the interpreter pays one indirect call per instruction and block.

// How a result is finished before the next op reads it: kept in float32, or rounded to bf16
// the way storing it would (in the same pass, so rounding costs no extra trip through cache).
struct KeepFloat {
  float operator()(float x) const { return x; }
};
struct RoundToBFloat16 {
  float operator()(float x) const {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof(float));
    const uint32_t rounded = ((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16) << 16;
    const uint32_t result = (bits & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : rounded;
    float y;
    std::memcpy(&y, &result, sizeof(float));
    return y;
  }
};

template <typename Finish, typename F>
__attribute__((always_inline)) inline void unary_as(float* out, const PointwiseSource& a, int64_t n, F f) {
  const Finish finish;
  if (a.values == nullptr) {
    std::fill(out, out + n, finish(f(a.constant)));
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = finish(f(a.values[i]));
}

template <typename Finish, typename F>
__attribute__((always_inline)) inline void binary_as(float* out, const PointwiseSource& a,
                                                     const PointwiseSource& b, int64_t n, F f) {
  const Finish finish;
  if (a.values != nullptr && b.values != nullptr) {
    for (int64_t i = 0; i < n; ++i) out[i] = finish(f(a.values[i], b.values[i]));
  } else if (a.values != nullptr) {
    const float y = b.constant;
    for (int64_t i = 0; i < n; ++i) out[i] = finish(f(a.values[i], y));
  } else if (b.values != nullptr) {
    const float x = a.constant;
    for (int64_t i = 0; i < n; ++i) out[i] = finish(f(x, b.values[i]));
  } else {
    std::fill(out, out + n, finish(f(a.constant, b.constant)));
  }
}

// Three operands, any of them constants (spread over a block first: these ops are rare enough
// that one loop shape is worth more than eight).
template <typename Finish, typename F>
__attribute__((always_inline)) inline void ternary_as(float* out, const PointwiseSource* sources,
                                                      int64_t n, F f) {
  const Finish finish;
  float spread[3][kPointwiseBlock];
  const float* values[3];
  for (int k = 0; k < 3; ++k) {
    values[k] = sources[k].values;
    if (values[k] == nullptr) {
      std::fill(spread[k], spread[k] + n, sources[k].constant);
      values[k] = spread[k];
    }
  }
  for (int64_t i = 0; i < n; ++i) out[i] = finish(f(values[0][i], values[1][i], values[2][i]));
}

// function(x or -x) on a copy (vector_math.h: ATen's array functions, which compiled kernels
// call too), then `combine(x, value)` and the finish element by element.
template <typename Finish, typename F>
__attribute__((always_inline)) inline void function_then_as(float* out, const PointwiseSource& a, int64_t n,
                                                            bool negate, InPlaceFn function, F combine) {
  const Finish finish;
  if (a.values == nullptr) {
    float e = negate ? -a.constant : a.constant;
    function(&e, 1);
    std::fill(out, out + n, finish(combine(a.constant, e)));
    return;
  }
  float e[kPointwiseBlock];
  if (negate) {
    for (int64_t i = 0; i < n; ++i) e[i] = -a.values[i];
  } else {
    std::memcpy(e, a.values, static_cast<size_t>(n) * sizeof(float));
  }
  function(e, n);
  for (int64_t i = 0; i < n; ++i) out[i] = finish(combine(a.values[i], e[i]));
}

// function(x or -x) computed in `out`, then the finish.
template <typename Finish>
__attribute__((always_inline)) inline void applied_as(float* out, const PointwiseSource& a, int64_t n,
                                                      bool negate, InPlaceFn function) {
  const Finish finish;
  if (a.values == nullptr) {
    float value = negate ? -a.constant : a.constant;
    function(&value, 1);
    std::fill(out, out + n, finish(value));
    return;
  }
  if (negate) {
    for (int64_t i = 0; i < n; ++i) out[i] = -a.values[i];
  } else if (out != a.values) {
    std::memcpy(out, a.values, static_cast<size_t>(n) * sizeof(float));
  }
  function(out, n);
  for (int64_t i = 0; i < n; ++i) out[i] = finish(out[i]);
}

#define TORCH_TPU_CLONED __attribute__((target_clones("avx512f", "avx2", "default")))

// Block functions for rows. F: float(x), or float(x, y), or float(x, y, alpha) for ops that read
// alpha, and likewise for three operands.
template <auto F>
TORCH_TPU_CLONED void unary(const PointwiseBlock& block) {
  const auto f = [](float x) { return F(x); };
  if (block.round_bfloat16) return unary_as<RoundToBFloat16>(block.out, block.sources[0], block.n, f);
  unary_as<KeepFloat>(block.out, block.sources[0], block.n, f);
}

template <auto F>
TORCH_TPU_CLONED void binary(const PointwiseBlock& block) {
  const auto f = [alpha = block.alpha](float x, float y) {
    if constexpr (std::is_invocable_v<decltype(F), float, float, float>) {
      return F(x, y, alpha);
    } else {
      return F(x, y);
    }
  };
  const PointwiseSource* s = block.sources;
  if (block.round_bfloat16) return binary_as<RoundToBFloat16>(block.out, s[0], s[1], block.n, f);
  binary_as<KeepFloat>(block.out, s[0], s[1], block.n, f);
}

template <auto F>
TORCH_TPU_CLONED void ternary(const PointwiseBlock& block) {
  const auto f = [alpha = block.alpha](float x, float y, float z) {
    if constexpr (std::is_invocable_v<decltype(F), float, float, float, float>) {
      return F(x, y, z, alpha);
    } else {
      return F(x, y, z);
    }
  };
  if (block.round_bfloat16) return ternary_as<RoundToBFloat16>(block.out, block.sources, block.n, f);
  ternary_as<KeepFloat>(block.out, block.sources, block.n, f);
}

// F(x, lo, hi) with operands 1 and 2 read as the constants lo and hi (clamp's bounds).
template <auto F>
TORCH_TPU_CLONED void bounded(const PointwiseBlock& block) {
  const auto f = [lo = block.sources[1].constant, hi = block.sources[2].constant](float x) {
    return F(x, lo, hi);
  };
  if (block.round_bfloat16) return unary_as<RoundToBFloat16>(block.out, block.sources[0], block.n, f);
  unary_as<KeepFloat>(block.out, block.sources[0], block.n, f);
}

// F(x, value) where value is the row's function on x (or -x).
template <auto F>
TORCH_TPU_CLONED void function_then(const PointwiseBlock& block) {
  const auto f = [](float x, float e) { return F(x, e); };
  const PointwiseSource& a = block.sources[0];
  if (block.round_bfloat16) {
    return function_then_as<RoundToBFloat16>(block.out, a, block.n, block.negate, block.function, f);
  }
  function_then_as<KeepFloat>(block.out, a, block.n, block.negate, block.function, f);
}

// The row's function on x (or -x), nothing more.
TORCH_TPU_CLONED void applied(const PointwiseBlock& block) {
  const PointwiseSource& a = block.sources[0];
  if (block.round_bfloat16) return applied_as<RoundToBFloat16>(block.out, a, block.n, block.negate, block.function);
  applied_as<KeepFloat>(block.out, a, block.n, block.negate, block.function);
}

#undef TORCH_TPU_CLONED

// --- the table -------------------------------------------------------------------------------

constexpr bool kLayoutIndependent = true;
using Alpha = PointwiseAlpha;
using Op = PointwiseOpcode;

constexpr PointwiseOpInfo kOps[] = {
    {.opcode = Op::kAdd, .name = "add", .arity = 2, .alpha = Alpha::kOwnForm,
     .form = {binary<[](float x, float y) { return x + y; }>, "({0} + {1})", "({0} + {1s})", kLayoutIndependent},
     // ATen's vectorized add: fmadd(b, alpha, a).
     .alpha_form = {binary<[](float x, float y, float alpha) { return std::fma(alpha, y, x); }>,
                    "std::fma({alpha}, {1}, {0})", "vfma({alpha}, {1}, {0})"}},
    {.opcode = Op::kSub, .name = "sub", .arity = 2, .alpha = Alpha::kOwnForm,
     .form = {binary<[](float x, float y) { return x - y; }>, "({0} - {1})", "({0} - {1s})", kLayoutIndependent},
     .alpha_form = {binary<[](float x, float y, float alpha) { return std::fma(-alpha, y, x); }>,
                    "std::fma(-{alpha}, {1}, {0})", "vfma(-{alpha}, {1}, {0})"}},
    {.opcode = Op::kMul, .name = "mul", .arity = 2,
     .form = {binary<[](float x, float y) { return x * y; }>, "({0} * {1})", "({0} * {1s})", kLayoutIndependent}},
    {.opcode = Op::kDiv, .name = "div", .arity = 2,
     .form = {binary<[](float x, float y) { return x / y; }>, "({0} / {1})", "({0} / {1s})", kLayoutIndependent}},
    {.opcode = Op::kNeg, .name = "neg", .arity = 1,
     .form = {unary<[](float x) { return -x; }>, "(-{0})", "(-{0})", kLayoutIndependent}},
    // ATen's relu is clamp_min(x, 0): NaN and -0.0 pass through, negatives become +0.0.
    {.opcode = Op::kRelu, .name = "relu", .arity = 1,
     .form = {unary<relu>, "relu({0})", "vrelu({0})"}},
    {.opcode = Op::kAbs, .name = "abs", .arity = 1,
     .form = {unary<[](float x) { return std::fabs(x); }>, "std::fabs({0})", "vabs({0})", kLayoutIndependent}},
    {.opcode = Op::kReciprocal, .name = "reciprocal", .arity = 1,
     .form = {unary<[](float x) { return 1.0f / x; }>, "(1.0f / {0})", "(bc(1.0f) / {0})", kLayoutIndependent}},
    // Generated only for bf16 (float32's is MKL's): ATen computes it in float, correctly rounded,
    // which is reduced_precision_vector_math().sqrt and the generated std::sqrt alike.
    {.opcode = Op::kSqrt, .name = "sqrt", .arity = 1, .compiled_in_float32 = false,
     .function = {&VectorMath::sqrt},
     .form = {applied, "std::sqrt({0})", "vsqrt({0})", kLayoutIndependent}},
    {.opcode = Op::kRsqrt, .name = "rsqrt", .arity = 1,
     .form = {unary<[](float x) { return 1.0f / std::sqrt(x); }>, "(1.0f / std::sqrt({0}))", "vrsqrt({0})",
              kLayoutIndependent}},
    // Generated only for bf16 (float32's is MKL's), whose exp is SLEEF's vectorized one.
    {.opcode = Op::kExp, .name = "exp", .arity = 1, .compiled_in_float32 = false,
     .function = {&VectorMath::exp, &VectorMath::vectorized_exp},
     .form = {applied, "{f}", "{f}", kLayoutIndependent}},
    // Tanh, sigmoid and silu are not layout independent: ATen's scalar loop computes them with
    // std::tanh / std::exp.
    {.opcode = Op::kTanh, .name = "tanh", .arity = 1,
     .function = {&VectorMath::vectorized_tanh, &VectorMath::vectorized_tanh},
     .form = {applied, "{f}", "{f}"}},
    {.opcode = Op::kSigmoid, .name = "sigmoid", .arity = 1,
     .function = {&VectorMath::vectorized_exp, &VectorMath::vectorized_exp, /*negated=*/true},
     .form = {function_then<[](float, float e) { return 1.0f / (1.0f + e); }>, "(1.0f / (1.0f + {f}))",
              "(bc(1.0f) / (bc(1.0f) + {f}))"}},
    {.opcode = Op::kSilu, .name = "silu", .arity = 1,
     .function = {&VectorMath::vectorized_exp, &VectorMath::vectorized_exp, /*negated=*/true},
     .form = {function_then<[](float x, float e) { return x / (1.0f + e); }>, "({0} / (1.0f + {f}))",
              "({0} / (bc(1.0f) + {f}))"}},
    {.opcode = Op::kMaximum, .name = "maximum", .arity = 2,
     .form = {binary<maximum>, "maximum({0}, {1})", "vmaximum({0}, {1})"}},
    {.opcode = Op::kMinimum, .name = "minimum", .arity = 2,
     .form = {binary<minimum>, "minimum({0}, {1})", "vminimum({0}, {1})"}},
    {.opcode = Op::kClamp, .name = "clamp", .arity = 3,
     .form = {bounded<clamp>, "clamp({0}, {1}, {2})", "vclamp({0}, {1}, {2})"}},
    {.opcode = Op::kAddcmul, .name = "addcmul", .arity = 3, .alpha = Alpha::kArgument,
     .form = {ternary<addcmul>, "addcmul({0}, {1}, {2}, {alpha})", "vaddcmul({0}, {1}, {2}, {alpha})"}},
    {.opcode = Op::kAddcdiv, .name = "addcdiv", .arity = 3, .alpha = Alpha::kArgument,
     .form = {ternary<addcdiv>, "addcdiv({0}, {1}, {2}, {alpha})", "vaddcdiv({0}, {1}, {2}, {alpha})"}},
    {.opcode = Op::kLerp, .name = "lerp", .arity = 3,
     .form = {ternary<lerp>, "lerp({0}, {1}, {2})", "vlerp({0}, {1}, {2})"}},
    {.opcode = Op::kCube, .name = "cube", .arity = 1,
     .form = {unary<[](float x) { return x * x * x; }>, "({0} * {0} * {0})", "({0} * {0} * {0})",
              kLayoutIndependent}},
};

static_assert(std::size(kOps) == static_cast<size_t>(PointwiseOpcode::kCount),
              "every PointwiseOpcode needs exactly one row in kOps");

constexpr bool rows_follow_the_enum() {
  for (size_t i = 0; i < std::size(kOps); ++i) {
    if (kOps[i].opcode != static_cast<PointwiseOpcode>(i)) return false;
  }
  return true;
}
static_assert(rows_follow_the_enum(), "kOps must list the opcodes in enum order");

// Whether `code` uses only placeholders the row can fill (PointwiseForm), and {f} exactly when
// the row has a function for generated kernels (which then call it before the expression).
constexpr bool well_formed(const char* code, const PointwiseOpInfo& op, bool vector, bool alpha_form) {
  if (code == nullptr) return false;
  bool uses_function = false;
  for (const char* p = code; *p != '\0'; ++p) {
    if (*p == '}') return false;
    if (*p != '{') continue;
    const char* key = ++p;
    while (*p != '}') {
      if (*p == '\0' || *p == '{') return false;
      ++p;
    }
    const std::string_view name(key, static_cast<size_t>(p - key));
    const bool operand = !name.empty() && name[0] >= '0' && name[0] < '0' + op.arity &&
                         (name.size() == 1 || (vector && name.size() == 2 && name[1] == 's'));
    if (name == "f") {
      uses_function = true;
    } else if (name == "alpha") {
      if (op.alpha == PointwiseAlpha::kNone || (op.alpha == PointwiseAlpha::kOwnForm && !alpha_form)) return false;
    } else if (!operand) {
      return false;
    }
  }
  return uses_function == (op.function.generated != nullptr);
}

constexpr bool well_formed(const PointwiseForm& form, const PointwiseOpInfo& op, bool alpha_form) {
  return form.interpret != nullptr && well_formed(form.scalar, op, false, alpha_form) &&
         well_formed(form.vector, op, true, alpha_form);
}

constexpr bool rows_are_well_formed() {
  for (const PointwiseOpInfo& op : kOps) {
    if (op.name == nullptr || op.arity < 1 || op.arity > kMaxPointwiseArity) return false;
    if (op.function.generated != nullptr &&
        (op.function.interpreted == nullptr || vector_math_member_name(op.function.generated) == nullptr)) {
      return false;
    }
    if (!well_formed(op.form, op, false)) return false;
    const bool own_form = op.alpha == PointwiseAlpha::kOwnForm;
    if (own_form ? !well_formed(op.alpha_form, op, true) : op.alpha_form.interpret != nullptr) return false;
  }
  return true;
}
static_assert(rows_are_well_formed(), "a kOps row's code templates or function do not fit its operands");

}  // namespace

const PointwiseOpInfo& pointwise_op(PointwiseOpcode opcode) {
  TORCH_INTERNAL_ASSERT_DEBUG_ONLY(static_cast<size_t>(opcode) < std::size(kOps));
  return kOps[static_cast<size_t>(opcode)];
}

std::span<const PointwiseOpInfo> pointwise_ops() { return kOps; }

}  // namespace torch_tpu::executors::host
