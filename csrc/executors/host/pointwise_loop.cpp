#include "executors/host/pointwise_loop.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>
#include <c10/util/SmallVector.h>

#include "executors/host/pointwise_codegen.h"
#include "executors/host/pointwise_ops.h"
#include "executors/host/pointwise_program.h"
#include "executors/host/vector_math.h"

namespace torch_tpu::executors::host {
namespace {

std::atomic<int64_t> g_interpreted_runs{0};

constexpr int64_t kBlock = kPointwiseBlock;  // what the rows' block functions take
// Elements per parallel task of a compiled kernel (it streams; no blocks).
constexpr int64_t kCompiledGrain = 16 * kBlock;

// --- conversions (auto-vectorized; AVX2 clone where the CPU has it) --------------------------

__attribute__((target_clones("avx512f", "avx2", "default")))
void load_bfloat16(float* out, const uint16_t* in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(in[i]) << 16;
    std::memcpy(&out[i], &bits, sizeof(float));
  }
}

// Round to nearest even, NaN kept a quiet NaN: c10::BFloat16's rounding.
__attribute__((target_clones("avx512f", "avx2", "default")))
void store_bfloat16(uint16_t* out, const float* in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &in[i], sizeof(float));
    const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    out[i] = (bits & 0x7fffffffu) > 0x7f800000u ? uint16_t{0x7fc0} : static_cast<uint16_t>(rounded);
  }
}

void round_to_half(float* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(c10::Half(values[i]));
}

void load(float* out, const void* in, c10::ScalarType dtype, int64_t n) {
  if (dtype == c10::kFloat) {
    std::memcpy(out, in, static_cast<size_t>(n) * sizeof(float));
  } else if (dtype == c10::kBFloat16) {
    load_bfloat16(out, static_cast<const uint16_t*>(in), n);
  } else {
    const auto* half = static_cast<const c10::Half*>(in);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(half[i]);
  }
}

void store(void* out, const float* in, c10::ScalarType dtype, int64_t n) {
  if (dtype == c10::kFloat) {
    if (out != in) std::memcpy(out, in, static_cast<size_t>(n) * sizeof(float));
  } else if (dtype == c10::kBFloat16) {
    store_bfloat16(static_cast<uint16_t*>(out), in, n);
  } else {
    auto* half = static_cast<c10::Half*>(out);
    for (int64_t i = 0; i < n; ++i) half[i] = c10::Half(in[i]);
  }
}

// --- strided tensors -------------------------------------------------------------------------

// Calls f(position, offset, length) for each run of elements [begin, begin + n) of `shape`
// (row-major order) along its last dim: `length` elements that sit at positions
// [position, position + length) of the block and start at element `offset` of a tensor with
// `strides`.
template <typename F>
void for_each_run(c10::IntArrayRef shape, c10::IntArrayRef strides, int64_t begin, int64_t n, F f) {
  const size_t last = shape.size() - 1;
  c10::SmallVector<int64_t, 8> index(shape.size(), 0);
  int64_t offset = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = begin % shape[d];
    begin /= shape[d];
    offset += index[d] * strides[d];
  }
  for (int64_t position = 0; position < n;) {
    const int64_t length = std::min(shape[last] - index[last], n - position);
    f(position, offset, length);
    position += length;
    index[last] += length;
    offset += length * strides[last];
    for (size_t d = last; d > 0 && index[d] == shape[d]; --d) {
      offset += strides[d - 1] - shape[d] * strides[d];
      index[d] = 0;
      ++index[d - 1];
    }
  }
}

// A float32 run that is a plain copy or a broadcast value, with the CPU's widest vectors (this
// file is otherwise built for baseline x86-64, whose 16-byte stores made these runs cost more
// than the arithmetic on the block).
__attribute__((target_clones("avx512f", "avx2", "default")))
void fill_floats(float* out, float value, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = value;
}

__attribute__((target_clones("avx512f", "avx2", "default")))
void gather_every_other_float(float* out, const float* in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = in[2 * i];
}

// Runs of the last dim, `kStep` elements apart in memory (-1: strides.back(), read at run
// time). The common steps are compile-time constants so the compiler vectorizes them: 1 (a row
// of a transposed view), 2 (x[..., 0::2]) and 0 (broadcast along the last dim).
template <int64_t kStep, typename T>
void gather_steps(float* out, const T* base, c10::IntArrayRef shape, c10::IntArrayRef strides,
                  int64_t begin, int64_t n) {
  const int64_t step = kStep >= 0 ? kStep : strides.back();
  for_each_run(shape, strides, begin, n, [&](int64_t position, int64_t offset, int64_t length) {
    const T* in = base + offset;
    float* to = out + position;
    if constexpr (std::is_same_v<T, float> && kStep == 0) {
      fill_floats(to, *in, length);
    } else if constexpr (std::is_same_v<T, float> && kStep == 1) {
      std::memcpy(to, in, static_cast<size_t>(length) * sizeof(float));
    } else if constexpr (std::is_same_v<T, float> && kStep == 2) {
      gather_every_other_float(to, in, length);
    } else {
      for (int64_t i = 0; i < length; ++i) to[i] = static_cast<float>(in[i * step]);
    }
  });
}

template <int64_t kStep, typename T>
void scatter_steps(T* base, const float* in, c10::IntArrayRef shape, c10::IntArrayRef strides,
                   int64_t begin, int64_t n) {
  const int64_t step = kStep >= 0 ? kStep : strides.back();
  for_each_run(shape, strides, begin, n, [&](int64_t position, int64_t offset, int64_t length) {
    T* out = base + offset;
    const float* from = in + position;
    if constexpr (std::is_same_v<T, float> && kStep == 1) {
      std::memcpy(out, from, static_cast<size_t>(length) * sizeof(float));
      return;
    }
    // c10's conversions round as load()/store() do (nearest even, NaN kept quiet).
    for (int64_t i = 0; i < length; ++i) out[i * step] = static_cast<T>(from[i]);
  });
}

// Calls f(std::integral_constant<int64_t, kStep>) for `step`: the common steps as themselves,
// any other as -1.
template <typename F>
void with_step(int64_t step, F&& f) {
  switch (step) {
    case 0: return f(std::integral_constant<int64_t, 0>{});
    case 1: return f(std::integral_constant<int64_t, 1>{});
    case 2: return f(std::integral_constant<int64_t, 2>{});
    default: return f(std::integral_constant<int64_t, -1>{});
  }
}

template <typename T>
void gather_as(float* out, const T* base, c10::IntArrayRef shape, c10::IntArrayRef strides,
               int64_t begin, int64_t n) {
  with_step(strides.back(), [&](auto step) {
    gather_steps<decltype(step)::value>(out, base, shape, strides, begin, n);
  });
}

template <typename T>
void scatter_as(T* base, const float* in, c10::IntArrayRef shape, c10::IntArrayRef strides,
                int64_t begin, int64_t n) {
  with_step(strides.back(), [&](auto step) {
    scatter_steps<decltype(step)::value>(base, in, shape, strides, begin, n);
  });
}

// Elements [begin, begin + n) of a strided register into a block buffer, and back.
void gather(float* out, const void* base, c10::ScalarType dtype, c10::IntArrayRef shape,
            c10::IntArrayRef strides, int64_t begin, int64_t n) {
  if (dtype == c10::kFloat) {
    gather_as(out, static_cast<const float*>(base), shape, strides, begin, n);
  } else if (dtype == c10::kBFloat16) {
    gather_as(out, static_cast<const c10::BFloat16*>(base), shape, strides, begin, n);
  } else {
    gather_as(out, static_cast<const c10::Half*>(base), shape, strides, begin, n);
  }
}

void scatter(void* base, const float* in, c10::ScalarType dtype, c10::IntArrayRef shape,
             c10::IntArrayRef strides, int64_t begin, int64_t n) {
  if (dtype == c10::kFloat) {
    scatter_as(static_cast<float*>(base), in, shape, strides, begin, n);
  } else if (dtype == c10::kBFloat16) {
    scatter_as(static_cast<c10::BFloat16*>(base), in, shape, strides, begin, n);
  } else {
    scatter_as(static_cast<c10::Half*>(base), in, shape, strides, begin, n);
  }
}

// Interprets the program one op at a time over cache-resident blocks of kBlock elements.
// Results go to per-thread scratch buffers; a float32 tensor the cluster only reads is read in
// place (no copy into a buffer); a buffer's reads follow whichever of the two holds its value.
void interpret(const PointwiseProgram& program) {
  g_interpreted_runs.fetch_add(1, std::memory_order_relaxed);
  const int64_t numel = program.numel;
  const int64_t blocks = (numel + kBlock - 1) / kBlock;
  const VectorMath& math = vector_math();
  const VectorMath& reduced_math = reduced_precision_vector_math();
  at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t end) {
    // Kept per thread across runs: a demo step interprets ~100 small clusters, and allocating
    // these on each run cost more than some of the clusters' arithmetic.
    thread_local std::vector<float> storage;
    thread_local std::vector<const float*> reads;
    const size_t buffers = static_cast<size_t>(std::max(program.buffers, 1));
    if (storage.size() < buffers * kBlock) storage.resize(buffers * kBlock);
    reads.resize(buffers);
    const auto values = [&](int buffer) { return storage.data() + static_cast<size_t>(buffer) * kBlock; };
    for (int64_t block = first; block < end; ++block) {
      const int64_t begin = block * kBlock;
      const int64_t n = std::min(kBlock, numel - begin);
      for (size_t b = 0; b < buffers; ++b) reads[b] = values(static_cast<int>(b));
      for (const PointwiseRegister& reg : program.registers) {
        if (!reg.loaded) continue;
        const auto* base = static_cast<const char*>(host_address(reg.device_data));
        if (!reg.strides.empty()) {
          gather(values(reg.buffer), base, reg.dtype, program.shape, reg.strides, begin, n);
        } else if (reg.dtype == c10::kFloat) {
          reads[static_cast<size_t>(reg.buffer)] = reinterpret_cast<const float*>(base) + begin;
        } else {
          load(values(reg.buffer), base + begin * c10::elementSize(reg.dtype), reg.dtype, n);
        }
      }
      for (const PointwiseInstruction& instruction : program.instructions) {
        const PointwiseOpInfo& op = pointwise_op(instruction.opcode);
        PointwiseSource sources[kMaxPointwiseArity];
        for (size_t k = 0; k < instruction.operands.size() && k < static_cast<size_t>(kMaxPointwiseArity); ++k) {
          const int buffer = instruction.operands[k];
          sources[k] = buffer >= 0
                           ? PointwiseSource{reads[static_cast<size_t>(buffer)], 0.0f}
                           : PointwiseSource{nullptr, program.constants[static_cast<size_t>(instruction.constant_slots[k])]};
        }
        PointwiseBlock args;
        args.out = values(instruction.output);
        args.sources = sources;
        args.n = n;
        if (instruction.alpha_slot >= 0) args.alpha = program.constants[static_cast<size_t>(instruction.alpha_slot)];
        if (op.function.interpreted != nullptr) {
          args.function = (instruction.dtype == c10::kFloat ? math : reduced_math).*op.function.interpreted;
          args.negate = op.function.negated;
        }
        args.round_bfloat16 = instruction.dtype == c10::kBFloat16 && !program.excess_precision;
        op.form_for(instruction.alpha_slot >= 0).interpret(args);
        if (instruction.dtype == c10::kHalf && !program.excess_precision) round_to_half(args.out, n);
        reads[static_cast<size_t>(instruction.output)] = args.out;
      }
      for (const PointwiseRegister& reg : program.registers) {
        if (!reg.stored) continue;
        auto* base = static_cast<char*>(host_address(reg.device_data));
        const float* result = reads[static_cast<size_t>(reg.buffer)];
        if (!reg.strides.empty()) {
          scatter(base, result, reg.dtype, program.shape, reg.strides, begin, n);
        } else {
          store(base + begin * c10::elementSize(reg.dtype), result, reg.dtype, n);
        }
      }
    }
  });
}

// A strided program's kernel geometry (PointwiseKernelFn): ndim, the iteration shape, then each
// data register's strides, with outer dims merged where every register steps through them as
// one (a [8, 64, 128] iteration with a [8, 64, 1] operand runs as 512 rows of 128, one row
// index). The last dim is never merged: each register's step along it is compiled in.
std::vector<int64_t> strided_kernel_geometry(const PointwiseProgram& program) {
  std::vector<std::vector<int64_t>> strides;
  std::vector<int64_t> row_major(program.shape.size(), 1);
  for (size_t d = program.shape.size() - 1; d > 0; --d) row_major[d - 1] = row_major[d] * program.shape[d];
  for (const PointwiseRegister& reg : program.registers) {
    if (reg.loaded || reg.stored) strides.push_back(reg.strides.empty() ? row_major : reg.strides);
  }
  // Built innermost first: the last dim, then outer dims.
  const size_t last = program.shape.size() - 1;
  std::vector<int64_t> shape{program.shape[last]};
  std::vector<std::vector<int64_t>> merged(strides.size());
  for (size_t k = 0; k < strides.size(); ++k) merged[k] = {strides[k][last]};
  for (size_t d = last; d-- > 0;) {
    if (program.shape[d] == 1) continue;  // adds nothing to any address
    bool joins_outer = shape.size() > 1;
    for (size_t k = 0; k < strides.size() && joins_outer; ++k) {
      joins_outer = strides[k][d] == merged[k].back() * shape.back();
    }
    if (joins_outer) {
      shape.back() *= program.shape[d];
      continue;
    }
    shape.push_back(program.shape[d]);
    for (size_t k = 0; k < strides.size(); ++k) merged[k].push_back(strides[k][d]);
  }
  std::vector<int64_t> geometry{static_cast<int64_t>(shape.size())};
  geometry.insert(geometry.end(), shape.rbegin(), shape.rend());  // outermost first
  for (const auto& m : merged) geometry.insert(geometry.end(), m.rbegin(), m.rend());
  return geometry;
}

void run_compiled(PointwiseKernelFn kernel, const PointwiseProgram& program) {
  std::vector<char*> data;
  for (const PointwiseRegister& reg : program.registers) {
    if (reg.loaded || reg.stored) data.push_back(static_cast<char*>(host_address(reg.device_data)));
  }
  const VectorMath* math = &vector_math();
  if (!program.strided) {
    at::parallel_for(0, program.numel, kCompiledGrain, [&](int64_t begin, int64_t end) {
      kernel(data.data(), program.constants.data(), begin, end, math, nullptr);
    });
    count_compiled_kernel_run();
    return;
  }
  const std::vector<int64_t> geometry = strided_kernel_geometry(program);
  const int64_t inner = std::max<int64_t>(geometry[static_cast<size_t>(geometry[0])], 1);
  const int64_t rows = program.numel / inner;
  at::parallel_for(0, rows, std::max<int64_t>(kCompiledGrain / inner, 1), [&](int64_t begin, int64_t end) {
    kernel(data.data(), program.constants.data(), begin, end, math, geometry.data());
  });
  count_compiled_kernel_run();
}

}  // namespace

bool pointwise_loop_supports(const ClusterPlan& plan, const std::vector<const FusibleOp*>& ops) {
  return pointwise_program_supports(plan, ops);
}

void run_pointwise_loop(const ClusterPlan& plan, const std::vector<const FusibleOp*>& ops) {
  const PointwiseProgram program = build_pointwise_program(plan, ops);
  if (program.numel == 0) return;
  PointwiseKernelSlot& slot = *plan.pointwise_kernel;
  if (PointwiseKernelFn kernel = slot.ready(program)) {
    run_compiled(kernel, program);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  interpret(program);
  slot.interpreted(program, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - start).count());
}

int64_t interpreted_kernel_runs() { return g_interpreted_runs.load(std::memory_order_relaxed); }

}  // namespace torch_tpu::executors::host
