#include "executors/host/vector_math.h"

#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>

// In libtorch_cpu (SLEEF and MKL, which ATen calls). Weak: a torch build without them leaves
// these null, and the functions fall back to the C library's.
extern "C" __m512 Sleef_expf16_u10(__m512) __attribute__((weak));
extern "C" __m256 Sleef_expf8_u10(__m256) __attribute__((weak));
extern "C" __m512 Sleef_tanhf16_u10(__m512) __attribute__((weak));
extern "C" __m256 Sleef_tanhf8_u10(__m256) __attribute__((weak));
#endif
// MKL's vector math, LP64 (MKL_INT is int), with the mode ATen passes (ATen/cpu/vml.h):
// VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE, values from MKL's mkl_vml_defines.h.
extern "C" void vmsExp(int n, const float* in, float* out, long long mode) __attribute__((weak));
extern "C" void vmsSqrt(int n, const float* in, float* out, long long mode) __attribute__((weak));
constexpr long long kAtenVmlMode = 0x00000002 | 0x00140000 | 0x00000100;

namespace torch_tpu::executors::host {
namespace {

void exp_scalar(float* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) values[i] = std::exp(values[i]);
}

void tanh_scalar(float* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) values[i] = std::tanh(values[i]);
}

#if defined(__x86_64__)
// Applies a SLEEF vector function over n floats in place, a tail padded to a whole vector.
// One template per instruction set: the target attribute must be on the function that holds
// the intrinsics (GCC gives a lambda no target of its own).
template <__m512 (*f)(__m512)>
__attribute__((target("avx512f"))) void map_avx512(float* values, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(values + i, f(_mm512_loadu_ps(values + i)));
  if (i < n) {
    alignas(64) float tail[16] = {};
    std::memcpy(tail, values + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm512_store_ps(tail, f(_mm512_load_ps(tail)));
    std::memcpy(values + i, tail, static_cast<size_t>(n - i) * sizeof(float));
  }
}

template <__m256 (*f)(__m256)>
__attribute__((target("avx2"))) void map_avx2(float* values, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(values + i, f(_mm256_loadu_ps(values + i)));
  if (i < n) {
    alignas(32) float tail[8] = {};
    std::memcpy(tail, values + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm256_store_ps(tail, f(_mm256_load_ps(tail)));
    std::memcpy(values + i, tail, static_cast<size_t>(n - i) * sizeof(float));
  }
}

// The SLEEF function ATen's Vectorized<float> uses for this CPU (AVX-512 where it has it, else
// AVX2), or null where torch lacks it.
InPlaceFn sleef_for_this_cpu(bool have512, InPlaceFn avx512, bool have256, InPlaceFn avx2) {
  if (have512 && __builtin_cpu_supports("avx512f")) return avx512;
  if (have256 && __builtin_cpu_supports("avx2")) return avx2;
  return nullptr;
}
#endif

void sqrt_scalar(float* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) values[i] = std::sqrt(values[i]);
}

// Runs MKL's vector function `vml` over n values in place, with ATen's mode (ATen/cpu/vml.h).
void mkl_in_place(void (*vml)(int, const float*, float*, long long), float* values, int64_t n) {
  constexpr int64_t kMaxCall = int64_t{1} << 30;  // MKL_INT is a 32-bit int
  for (int64_t i = 0; i < n; i += kMaxCall) {
    const int count = static_cast<int>(n - i < kMaxCall ? n - i : kMaxCall);
    vml(count, values + i, values + i, kAtenVmlMode);
  }
}

void exp_mkl(float* values, int64_t n) { mkl_in_place(vmsExp, values, n); }
void sqrt_mkl(float* values, int64_t n) { mkl_in_place(vmsSqrt, values, n); }

VectorMath pick() {
  VectorMath math{&exp_scalar, &exp_scalar, &sqrt_scalar, &tanh_scalar};
#if defined(__x86_64__)
  if (InPlaceFn exp = sleef_for_this_cpu(Sleef_expf16_u10 != nullptr, &map_avx512<Sleef_expf16_u10>,
                                         Sleef_expf8_u10 != nullptr, &map_avx2<Sleef_expf8_u10>)) {
    math.vectorized_exp = exp;
  }
  if (InPlaceFn tanh = sleef_for_this_cpu(Sleef_tanhf16_u10 != nullptr, &map_avx512<Sleef_tanhf16_u10>,
                                          Sleef_tanhf8_u10 != nullptr, &map_avx2<Sleef_tanhf8_u10>)) {
    math.vectorized_tanh = tanh;
  }
#endif
  if (vmsExp != nullptr) math.exp = &exp_mkl;
  if (vmsSqrt != nullptr) math.sqrt = &sqrt_mkl;
  // MKL's first vector-math call sets itself up, and two threads making their first calls at
  // once on a crowded machine can get a low-accuracy result on one of them (measured: one
  // thread's half of a 16384-float sqrt off by 3e-4 relative, in about 1 of 12 fresh
  // processes, PyTorch CPU eager alike). One call here, on one thread, sets MKL up first.
  float warm[16] = {1.0f};
  if (vmsExp != nullptr) exp_mkl(warm, 16);
  if (vmsSqrt != nullptr) sqrt_mkl(warm, 16);
  return math;
}

}  // namespace

const VectorMath& vector_math() {
  static const VectorMath chosen = pick();
  return chosen;
}

const VectorMath& reduced_precision_vector_math() {
  static const VectorMath chosen = [] {
    const VectorMath& math = vector_math();
    return VectorMath{math.vectorized_exp, math.vectorized_exp, &sqrt_scalar, math.vectorized_tanh};
  }();
  return chosen;
}

}  // namespace torch_tpu::executors::host
