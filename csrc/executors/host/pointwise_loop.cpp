#include "executors/host/pointwise_loop.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <limits>
#include <map>

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>

namespace torch_tpu::executors::host {
namespace {

// Floats per block: a handful of blocks stay in a core's L1/L2 cache.
constexpr int64_t kBlock = 2048;

bool floating(c10::ScalarType dtype) {
  return dtype == c10::kFloat || dtype == c10::kBFloat16 || dtype == c10::kHalf;
}

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
    std::memcpy(out, in, static_cast<size_t>(n) * sizeof(float));
  } else if (dtype == c10::kBFloat16) {
    store_bfloat16(static_cast<uint16_t*>(out), in, n);
  } else {
    auto* half = static_cast<c10::Half*>(out);
    for (int64_t i = 0; i < n; ++i) half[i] = c10::Half(in[i]);
  }
}

// --- the ops ---------------------------------------------------------------------------------

// An operand inside a block: a register (kBlock floats) or a constant.
struct Source {
  const float* values = nullptr;  // null: constant
  float constant = 0.0f;
  float at(int64_t i) const { return values != nullptr ? values[i] : constant; }
};

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
__attribute__((always_inline)) inline void unary(float* out, const Source& a, int64_t n, F f) {
  const Finish finish;
  if (a.values == nullptr) {
    std::fill(out, out + n, finish(f(a.constant)));
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = finish(f(a.values[i]));
}

template <typename Finish, typename F>
__attribute__((always_inline)) inline void binary(float* out, const Source& a, const Source& b,
                                                  int64_t n, F f) {
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

template <typename Finish>
__attribute__((always_inline)) inline void execute_as(PointwiseOpcode opcode, float* out,
                                                      const Source* sources, float alpha,
                                                      int64_t n) {
  const Source& a = sources[0];
  switch (opcode) {
    case PointwiseOpcode::kAdd:
      if (alpha == 1.0f) return binary<Finish>(out, a, sources[1], n, [](float x, float y) { return x + y; });
      return binary<Finish>(out, a, sources[1], n, [alpha](float x, float y) { return x + alpha * y; });
    case PointwiseOpcode::kSub:
      if (alpha == 1.0f) return binary<Finish>(out, a, sources[1], n, [](float x, float y) { return x - y; });
      return binary<Finish>(out, a, sources[1], n, [alpha](float x, float y) { return x - alpha * y; });
    case PointwiseOpcode::kMul:
      return binary<Finish>(out, a, sources[1], n, [](float x, float y) { return x * y; });
    case PointwiseOpcode::kDiv:
      return binary<Finish>(out, a, sources[1], n, [](float x, float y) { return x / y; });
    case PointwiseOpcode::kMaximum:
      return binary<Finish>(out, a, sources[1], n, [](float x, float y) {
        return (x != x || y != y) ? std::numeric_limits<float>::quiet_NaN() : std::max(x, y);
      });
    case PointwiseOpcode::kMinimum:
      return binary<Finish>(out, a, sources[1], n, [](float x, float y) {
        return (x != x || y != y) ? std::numeric_limits<float>::quiet_NaN() : std::min(x, y);
      });
    case PointwiseOpcode::kClamp: {
      const float lo = sources[1].constant;
      const float hi = sources[2].constant;
      return unary<Finish>(out, a, n, [lo, hi](float x) { return x != x ? x : std::min(std::max(x, lo), hi); });
    }
    case PointwiseOpcode::kNeg:
      return unary<Finish>(out, a, n, [](float x) { return -x; });
    case PointwiseOpcode::kRelu:
      return unary<Finish>(out, a, n, [](float x) { return x != x ? x : (x > 0.0f ? x : 0.0f); });
    case PointwiseOpcode::kAbs:
      return unary<Finish>(out, a, n, [](float x) { return std::fabs(x); });
    case PointwiseOpcode::kReciprocal:
      return unary<Finish>(out, a, n, [](float x) { return 1.0f / x; });
    case PointwiseOpcode::kSqrt:
      return unary<Finish>(out, a, n, [](float x) { return std::sqrt(x); });
    case PointwiseOpcode::kRsqrt:
      return unary<Finish>(out, a, n, [](float x) { return 1.0f / std::sqrt(x); });
    case PointwiseOpcode::kExp:
      return unary<Finish>(out, a, n, [](float x) { return std::exp(x); });
    case PointwiseOpcode::kTanh:
      return unary<Finish>(out, a, n, [](float x) { return std::tanh(x); });
    case PointwiseOpcode::kSigmoid:
      return unary<Finish>(out, a, n, [](float x) { return 1.0f / (1.0f + std::exp(-x)); });
    case PointwiseOpcode::kSilu:
      return unary<Finish>(out, a, n, [](float x) { return x / (1.0f + std::exp(-x)); });
  }
}

__attribute__((target_clones("avx512f", "avx2", "default")))
void execute(PointwiseOpcode opcode, float* out, const Source* sources, float alpha, int64_t n,
             bool round_bfloat16) {
  if (round_bfloat16) {
    execute_as<RoundToBFloat16>(opcode, out, sources, alpha, n);
  } else {
    execute_as<KeepFloat>(opcode, out, sources, alpha, n);
  }
}

// The cluster as registers: one per distinct (chip address, dtype) the cluster touches.
struct Register {
  const void* device_data = nullptr;
  c10::ScalarType dtype = c10::kFloat;
  bool loaded = false;  // read before the cluster writes it: loaded per block
  bool stored = false;  // written and materialized: stored per block
  int scratch = -1;     // kept in scratch only
};

struct Instruction {
  PointwiseOpcode opcode;
  int output;                   // register
  std::vector<int> registers;   // per operand: register, or -1 for a constant
  std::vector<float> constants;
  float alpha;
  c10::ScalarType dtype;  // the output's: results are rounded to it
};

float read_scalar(const TensorSnapshot& snapshot) {
  float value = 0.0f;
  const at::Tensor view = snapshot.cpu_view();
  load(&value, view.data_ptr(), snapshot.dtype(), 1);
  return value;
}

}  // namespace

bool excess_precision() {
  static const bool enabled = [] {
    const char* value = std::getenv("TORCH_TPU_FUSED_EXCESS_PRECISION");
    return value != nullptr && std::string(value) == "1";
  }();
  return enabled;
}

bool pointwise_loop_supports(const ClusterPlan& plan, const std::vector<const FusibleOp*>& ops) {
  if (!plan.flat) return false;
  for (const FusibleOp* op : ops) {
    if (op->expression() == nullptr) return false;
    for (const FusedTensor& tensor : op->tensors()) {
      if (!floating(tensor.snapshot->dtype())) return false;
    }
  }
  return true;
}

void run_pointwise_loop(const ClusterPlan& plan, const std::vector<const FusibleOp*>& ops) {
  std::vector<Register> registers;
  std::map<std::pair<const void*, c10::ScalarType>, int> register_of;
  std::vector<Instruction> program;
  for (size_t o = 0; o < ops.size(); ++o) {
    const PointwiseExpression& expression = *ops[o]->expression();
    const std::vector<FusedTensor>& tensors = ops[o]->tensors();
    const auto reg = [&](int tensor, bool written) {
      const TensorSnapshot& snapshot = *tensors[static_cast<size_t>(tensor)].snapshot;
      const auto key = std::make_pair(snapshot.device_data(), snapshot.dtype());
      auto [found, added] = register_of.emplace(key, static_cast<int>(registers.size()));
      if (added) {
        Register fresh;
        fresh.device_data = snapshot.device_data();
        fresh.dtype = snapshot.dtype();
        fresh.loaded = !written;
        registers.push_back(fresh);
      }
      Register& r = registers[static_cast<size_t>(found->second)];
      if (written) {
        const ClusterPlan::Access& access = plan.accesses[o][static_cast<size_t>(tensor)];
        if (access.kind == ChunkAccess::kScratch) {
          r.scratch = access.scratch_slot;
        } else {
          r.stored = true;
        }
      }
      return found->second;
    };
    Instruction instruction{expression.opcode, -1, {}, {}, expression.alpha,
                            tensors[static_cast<size_t>(expression.output)].snapshot->dtype()};
    for (const PointwiseOperand& operand : expression.operands) {
      if (operand.tensor < 0) {
        instruction.registers.push_back(-1);
        instruction.constants.push_back(operand.constant);
        continue;
      }
      const ClusterPlan::Access& access = plan.accesses[o][static_cast<size_t>(operand.tensor)];
      if (access.kind == ChunkAccess::kWhole) {  // a single value, broadcast
        instruction.registers.push_back(-1);
        instruction.constants.push_back(read_scalar(*tensors[static_cast<size_t>(operand.tensor)].snapshot));
        continue;
      }
      instruction.registers.push_back(reg(operand.tensor, false));
      instruction.constants.push_back(0.0f);
    }
    instruction.output = reg(expression.output, true);
    program.push_back(std::move(instruction));
  }

  // Block buffers are reused once a register is done with: a long chain then runs in a few
  // cache-resident buffers, not one per intermediate. Loaded and stored registers keep theirs
  // for the whole block.
  const int count = static_cast<int>(registers.size());
  std::vector<int> last_use(static_cast<size_t>(count), -1);
  for (int r = 0; r < count; ++r) {
    if (registers[static_cast<size_t>(r)].stored || registers[static_cast<size_t>(r)].loaded) {
      last_use[static_cast<size_t>(r)] = static_cast<int>(program.size());
    }
  }
  for (size_t k = 0; k < program.size(); ++k) {
    for (int r : program[k].registers) {
      if (r >= 0) last_use[static_cast<size_t>(r)] = std::max(last_use[static_cast<size_t>(r)], static_cast<int>(k));
    }
    last_use[static_cast<size_t>(program[k].output)] =
        std::max(last_use[static_cast<size_t>(program[k].output)], static_cast<int>(k));
  }
  std::vector<int> buffer_of(static_cast<size_t>(count), -1);
  std::vector<int> free_buffers;
  int buffers = 0;
  const auto assign = [&](int r) {
    if (buffer_of[static_cast<size_t>(r)] >= 0) return;
    if (free_buffers.empty()) {
      buffer_of[static_cast<size_t>(r)] = buffers++;
    } else {
      buffer_of[static_cast<size_t>(r)] = free_buffers.back();
      free_buffers.pop_back();
    }
  };
  for (int r = 0; r < count; ++r) {
    if (registers[static_cast<size_t>(r)].loaded) assign(r);
  }
  for (size_t k = 0; k < program.size(); ++k) {
    Instruction& instruction = program[k];
    // Operands are read before the output is written, so an operand's buffer read for the
    // last time here may become the output's.
    std::vector<int> finished;
    for (int r : instruction.registers) {
      if (r >= 0 && last_use[static_cast<size_t>(r)] == static_cast<int>(k)) finished.push_back(r);
    }
    for (int r : finished) {
      if (std::find(free_buffers.begin(), free_buffers.end(), buffer_of[static_cast<size_t>(r)]) ==
          free_buffers.end()) {
        free_buffers.push_back(buffer_of[static_cast<size_t>(r)]);
      }
    }
    assign(instruction.output);
    if (!free_buffers.empty()) {
      free_buffers.erase(std::remove(free_buffers.begin(), free_buffers.end(),
                                     buffer_of[static_cast<size_t>(instruction.output)]),
                         free_buffers.end());
    }
    if (last_use[static_cast<size_t>(instruction.output)] == static_cast<int>(k)) {
      free_buffers.push_back(buffer_of[static_cast<size_t>(instruction.output)]);
    }
    for (int& r : instruction.registers) {
      if (r >= 0) r = buffer_of[static_cast<size_t>(r)];
    }
    instruction.output = buffer_of[static_cast<size_t>(instruction.output)];
  }

  const bool excess = excess_precision();
  int64_t numel = 1;
  for (int64_t size : plan.shape) numel *= size;
  const int64_t blocks = (numel + kBlock - 1) / kBlock;
  at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t end) {
    std::vector<float> storage(static_cast<size_t>(std::max(buffers, 1)) * kBlock);
    for (int64_t block = first; block < end; ++block) {
      const int64_t begin = block * kBlock;
      const int64_t n = std::min(kBlock, numel - begin);
      const auto values = [&](int r) { return storage.data() + static_cast<size_t>(r) * kBlock; };
      for (size_t r = 0; r < registers.size(); ++r) {
        const Register& reg = registers[r];
        if (!reg.loaded) continue;
        const auto* base = static_cast<const char*>(host_address(reg.device_data));
        load(values(buffer_of[r]), base + begin * c10::elementSize(reg.dtype), reg.dtype, n);
      }
      for (const Instruction& instruction : program) {
        Source sources[3];
        for (size_t k = 0; k < instruction.registers.size() && k < 3; ++k) {
          const int r = instruction.registers[k];
          sources[k] = r < 0 ? Source{nullptr, instruction.constants[k]} : Source{values(r), 0.0f};
        }
        execute(instruction.opcode, values(instruction.output), sources, instruction.alpha, n,
                instruction.dtype == c10::kBFloat16 && !excess);
        if (instruction.dtype == c10::kHalf && !excess) round_to_half(values(instruction.output), n);
      }
      for (size_t r = 0; r < registers.size(); ++r) {
        const Register& reg = registers[r];
        if (!reg.stored) continue;
        auto* base = static_cast<char*>(host_address(reg.device_data));
        store(base + begin * c10::elementSize(reg.dtype), values(buffer_of[r]), reg.dtype, n);
      }
    }
  });
}

}  // namespace torch_tpu::executors::host
