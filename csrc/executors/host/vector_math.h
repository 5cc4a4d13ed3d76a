// Vectorized math shared by the fused-kernel interpreter (pointwise_loop.cpp) and the kernels
// it generates (pointwise_codegen.cpp). Both call these same functions, so which of the two
// ran a cluster never changes a result; and they are the functions ATen's own CPU kernels use,
// so fused results are Strict's bits (but for the last few elements of each of ATen's ranges,
// which ATen computes with scalar std::exp). The scalar std::exp these replace ran ~10x slower
// per element and differed from Strict in the last bit for ~4% of sigmoid and silu results.
#pragma once

#include <cstdint>

namespace torch_tpu::executors::host {

// Computes in place over the `n` floats at `values`. A lane's result never depends on the
// others or on where it sits in the array (a tail is padded to a whole vector).
using InPlaceFn = void (*)(float* values, int64_t n);

struct VectorMath {
  // ATen's exp op: MKL's high-accuracy vector exp where torch has MKL (ATen's vml::vexp).
  InPlaceFn exp;
  // The exp inside ATen's vectorized kernels (sigmoid, silu): SLEEF's 1-ulp exp,
  // Vectorized<float>::exp(), 16 lanes at a time with AVX-512, else 8.
  InPlaceFn vectorized_exp;
  // ATen's float32 sqrt op: MKL's high-accuracy vector sqrt where torch has MKL (ATen's
  // vml::vsqrt, which it calls for every layout, copying strided operands through a buffer).
  // It differs from the correctly rounded std::sqrt in the last bit for ~18% of inputs.
  // (bfloat16/float16 sqrt is Vectorized<float>::sqrt, correctly rounded.)
  InPlaceFn sqrt;
  // ATen's tanh in every floating dtype: Vectorized<float>::tanh(), SLEEF's 1-ulp tanh. (The
  // C library's tanhf it replaces, which GCC vectorizes into glibc's libmvec variant under
  // -fopenmp, differed from Strict for ~14% of float32 results.)
  InPlaceFn vectorized_tanh;
};

// A member's name, as generated kernels' copy of VectorMath spells it
// (pointwise_codegen.cpp's prelude); null for a non-member.
constexpr const char* vector_math_member_name(InPlaceFn VectorMath::* member) {
  if (member == &VectorMath::exp) return "exp";
  if (member == &VectorMath::vectorized_exp) return "vectorized_exp";
  if (member == &VectorMath::sqrt) return "sqrt";
  if (member == &VectorMath::vectorized_tanh) return "vectorized_tanh";
  return nullptr;
}

// The implementations this CPU and torch build get, chosen once. Each falls back to std::exp
// (std::sqrt) where torch lacks the library.
const VectorMath& vector_math();

// The same for ops whose result is bfloat16 or float16, as ATen computes them: exp through
// Vectorized<float> (SLEEF) rather than MKL, sqrt correctly rounded.
const VectorMath& reduced_precision_vector_math();

}  // namespace torch_tpu::executors::host
