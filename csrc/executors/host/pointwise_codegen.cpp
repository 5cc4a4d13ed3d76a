#include "executors/host/pointwise_codegen.h"

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include "executors/host/pointwise_ops.h"

namespace torch_tpu::executors::host {
namespace {

bool codegen_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("TORCH_TPU_FUSED_CODEGEN");
    return value == nullptr || std::string(value) != "0";
  }();
  return enabled;
}

int64_t codegen_after_ns() {
  static const int64_t after = [] {
    const char* value = std::getenv("TORCH_TPU_CODEGEN_AFTER_MS");
    const double ms = value != nullptr && *value != '\0' ? std::atof(value) : 50.0;
    return static_cast<int64_t>(ms * 1e6);
  }();
  return after;
}

// A cluster also counts as hot once it has run this many times interpreted, in one cached plan
// (so in a loop: it will run as often again), and spent this long doing so: at the demo's
// sizes a cluster takes 50-600 us, so the time rule alone compiled none of a training step's
// clusters within 140 steps. Cheaper clusters are not worth a compile (~1 s of a core).
constexpr int64_t kHotRuns = 16;
constexpr int64_t kHotRunsMinimumNs = 1'000'000;

std::atomic<int64_t> compiled_runs{0};

// Helpers of every generated kernel: the interpreter's conversions
// (executors/host/pointwise_loop.cpp), spelled the same way, its scalar op helpers (pasted from
// pointwise_ops.h), and their vector forms, which the rows' vector code calls.
constexpr const char* kPrelude = R"(#include <cmath>
#include <cstdint>
#include <cstring>
namespace {
inline float load_f32(const char* p, int64_t i) { float x; std::memcpy(&x, p + 4 * i, 4); return x; }
inline void store_f32(char* p, int64_t i, float x) { std::memcpy(p + 4 * i, &x, 4); }
inline float load_bf16(const char* p, int64_t i) {
  uint16_t h; std::memcpy(&h, p + 2 * i, 2);
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x; std::memcpy(&x, &bits, 4); return x;
}
inline void store_bf16(char* p, int64_t i, float x) {
  uint32_t bits; std::memcpy(&bits, &x, 4);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint16_t h = (bits & 0x7fffffffu) > 0x7f800000u ? uint16_t{0x7fc0} : static_cast<uint16_t>(rounded);
  std::memcpy(p + 2 * i, &h, 2);
}
inline float round_bf16(float x) {
  uint32_t bits; std::memcpy(&bits, &x, 4);
  const uint32_t rounded = ((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16) << 16;
  const uint32_t result = (bits & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : rounded;
  float y; std::memcpy(&y, &result, 4); return y;
}
)" TORCH_TPU_POINTWISE_COMPARISONS(TORCH_TPU_POINTWISE_TEXT) R"(
// The same on a vector of kLanes (GCC vector extensions: every lane does exactly the scalar
// operation; math functions without vector forms go lane by lane). A vector is one register:
// 16 floats with AVX-512, else 8 (wider vectors on narrower hardware compile badly).
#ifdef __AVX512F__
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
typedef float vf __attribute__((vector_size(4 * kLanes)));
typedef uint32_t vu __attribute__((vector_size(4 * kLanes)));
typedef uint16_t vh __attribute__((vector_size(2 * kLanes)));
inline vf bc(float x) { return vf{} + x; }
inline vf select(vu mask, vf yes, vf no) { return (vf)(((vu)yes & mask) | ((vu)no & ~mask)); }
inline vf vload_f32(const char* p, int64_t i) { vf x; std::memcpy(&x, p + 4 * i, sizeof(vf)); return x; }
inline void vstore_f32(char* p, int64_t i, vf x) { std::memcpy(p + 4 * i, &x, sizeof(vf)); }
inline vf vload_bf16(const char* p, int64_t i) {
  vh h; std::memcpy(&h, p + 2 * i, sizeof(vh));
  return (vf)(__builtin_convertvector(h, vu) << 16);
}
// Rounding is most of a bf16 chain's work (an add is one instruction, rounding its result
// seven), so it is spelled for the fewest: a mask instead of two shifts, and NaN found by one
// float compare (AVX-512: into a mask register that the select uses directly). This cut a
// 150-op chain's loop by a quarter; the bits are the same.
inline vf vround_bf16(vf x) {
  const vu bits = (vu)x;
  const vf rounded = (vf)((bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u);
  return x != x ? bc(__builtin_nanf("")) : rounded;
}
inline void vstore_bf16(char* p, int64_t i, vf x) {
  const vh h = __builtin_convertvector((vu)vround_bf16(x) >> 16, vh);
  std::memcpy(p + 2 * i, &h, sizeof(vh));
}
// Elements i, i + 2, ..., i + 2 * (kLanes - 1) of a row (a tensor's even or odd elements,
// as rotary embeddings slice them): two loads that end at the last element (never past it),
// and the wanted lanes of the pair, instead of kLanes scalar loads.
#if defined(__AVX512F__)
#define TORCH_TPU_EVERY_OTHER 0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, 25, 27, 29, 31
#else
#define TORCH_TPU_EVERY_OTHER 0, 2, 4, 6, 9, 11, 13, 15
#endif
#if defined(__has_builtin) && __has_builtin(__builtin_shufflevector)  // GCC 12+, Clang
inline vf vload_f32_step2(const char* p, int64_t i) {
  vf a, b;
  std::memcpy(&a, p + 4 * i, sizeof(vf));
  std::memcpy(&b, p + 4 * (i + kLanes - 1), sizeof(vf));
  return __builtin_shufflevector(a, b, TORCH_TPU_EVERY_OTHER);
}
inline vf vload_bf16_step2(const char* p, int64_t i) {
  vh a, b;
  std::memcpy(&a, p + 2 * i, sizeof(vh));
  std::memcpy(&b, p + 2 * (i + kLanes - 1), sizeof(vh));
  const vh h = __builtin_shufflevector(a, b, TORCH_TPU_EVERY_OTHER);
  return (vf)(__builtin_convertvector(h, vu) << 16);
}
#else
inline vf vload_f32_step2(const char* p, int64_t i) {
  vf x; for (int l = 0; l < kLanes; ++l) x[l] = load_f32(p, i + 2 * l); return x;
}
inline vf vload_bf16_step2(const char* p, int64_t i) {
  vf x; for (int l = 0; l < kLanes; ++l) x[l] = load_bf16(p, i + 2 * l); return x;
}
#endif
inline vf vfma(float a, vf b, vf c) {
  vf r; for (int l = 0; l < kLanes; ++l) r[l] = std::fma(a, b[l], c[l]); return r;
}
)" TORCH_TPU_POINTWISE_COMBINATIONS(TORCH_TPU_POINTWISE_TEXT, TORCH_TPU_POINTWISE_TEXT_BLOCK) R"(inline vf vaddcmul(vf a, vf b, vf c, float alpha) {
  vf r; for (int l = 0; l < kLanes; ++l) r[l] = addcmul(a[l], b[l], c[l], alpha); return r;
}
inline vf vaddcdiv(vf a, vf b, vf c, float alpha) { return a + (alpha * b) / c; }
inline vf vlerp(vf s, vf e, vf w) {
  vf r; for (int l = 0; l < kLanes; ++l) r[l] = lerp(s[l], e[l], w[l]); return r;
}
inline vf vmax_of(vf x, vf y) { return select((vu)(x < y), y, x); }
inline vf vmin_of(vf x, vf y) { return select((vu)(y < x), y, x); }
inline vu vnan(vf x) { return (vu)(x != x); }
inline vf vmaximum(vf x, vf y) { return select(vnan(x) | vnan(y), bc(__builtin_nanf("")), vmax_of(x, y)); }
inline vf vminimum(vf x, vf y) { return select(vnan(x) | vnan(y), bc(__builtin_nanf("")), vmin_of(x, y)); }
inline vf vclamp(vf x, vf lo, vf hi) { return select(vnan(x), x, vmin_of(vmax_of(x, lo), hi)); }
inline vf vrelu(vf x) { return select((vu)(x < 0.0f), bc(0.0f), x); }
inline vf vabs(vf x) { return (vf)((vu)x & 0x7fffffffu); }
#define TORCH_TPU_LANES(name, expr) \
  inline vf name(vf v) { vf r; for (int l = 0; l < kLanes; ++l) { const float x = v[l]; r[l] = expr; } return r; }
TORCH_TPU_LANES(vsqrt, std::sqrt(x))
TORCH_TPU_LANES(vrsqrt, 1.0f / std::sqrt(x))
// The vector exp and tanh come from the caller: the interpreter's own functions
// (executors/host/vector_math.h, whose VectorMath this mirrors), so compiled and interpreted
// results stay the same bits. (Its MKL members, float32 exp and sqrt, are never called from
// generated code: such programs stay interpreted, see codegen_supports.)
typedef void (*InPlace)(float*, int64_t);
struct VectorMath { InPlace exp; InPlace vectorized_exp; InPlace sqrt; InPlace vectorized_tanh; };
inline float apply1(InPlace f, float x) { f(&x, 1); return x; }
}  // namespace
)";

// Vectors per main-loop step: independent chains, so a long chain of dependent ops keeps the
// vector units busy instead of waiting out each op's latency (8 ran a 150-op bf16 chain 1.3x
// faster than 4).
constexpr int kTiles = 8;

std::string function_value(int t) { return "vload_f32(fv, " + std::to_string(t) + " * kLanes)"; }

// Operand k of `instruction` on tile `t` of the vector loop, or on one element when t < 0:
// `b<buffer>[_<t>]`, or `c<slot>` for a constant, broadcast to a vector (bc) unless `as_is`.
std::string operand(const PointwiseInstruction& instruction, size_t k, int t, bool as_is = false) {
  const int buffer = instruction.operands[k];
  if (buffer >= 0) return "b" + std::to_string(buffer) + (t >= 0 ? "_" + std::to_string(t) : "");
  const std::string constant = "c" + std::to_string(instruction.constant_slots[k]);
  return t >= 0 && !as_is ? "bc(" + constant + ")" : constant;
}

// The instruction's expression: its row's scalar code (t < 0) or vector code on tile `t`, with
// the placeholders filled in (pointwise_ops.h: PointwiseForm). Constants stay scalars where
// the code takes one ({1s}), and are broadcast where a helper wants a vector.
std::string expression(const PointwiseInstruction& instruction, int t) {
  const PointwiseOpInfo& op = pointwise_op(instruction.opcode);
  const PointwiseForm& form = op.form_for(instruction.alpha_slot >= 0);
  std::string code;
  for (const char* p = t >= 0 ? form.vector : form.scalar; *p != '\0'; ++p) {
    if (*p != '{') {
      code += *p;
      continue;
    }
    const char* key = p + 1;
    p = std::strchr(key, '}');
    const std::string_view name(key, static_cast<size_t>(p - key));
    if (name == "alpha") {
      code += instruction.alpha_slot >= 0 ? "c" + std::to_string(instruction.alpha_slot) : "1.0f";
    } else if (name == "f" && t >= 0) {
      code += function_value(t);  // computed for all tiles at once (vector_function_call)
    } else if (name == "f") {
      code += std::string("apply1(math->") + vector_math_member_name(op.function.generated) + ", " +
              (op.function.negated ? "-" : "") + operand(instruction, 0, t) + ")";
    } else {
      code += operand(instruction, static_cast<size_t>(name[0] - '0'), t, name.size() == 2);
    }
  }
  return code;
}

// A row's function (exp, tanh) is the caller's array function (VectorMath). The vector loop
// calls it on all kTiles vectors of a step at once, through a stack array `fv`: a call per
// vector cost more than the arithmetic, as every live vector register is spilled around a call.
std::string vector_function_call(const PointwiseInstruction& instruction, const PointwiseFunction& f, int tiles) {
  std::string code;
  for (int t = 0; t < tiles; ++t) {
    code += "    vstore_f32(fv, " + std::to_string(t) + " * kLanes, " + (f.negated ? "-" : "") +
            operand(instruction, 0, t) + ");\n";
  }
  return code + "    math->" + vector_math_member_name(f.generated) + "(reinterpret_cast<float*>(fv), " +
         std::to_string(tiles) + " * kLanes);\n";
}

// Generated kernels get vector_math() and call `generated` where the interpreter calls
// `interpreted` of its dtype's VectorMath: they must be one function in every dtype compiled.
void check_generated_functions() {
  for (const PointwiseOpInfo& op : pointwise_ops()) {
    if (op.function.generated == nullptr) continue;
    const InPlaceFn generated = vector_math().*op.function.generated;
    TORCH_INTERNAL_ASSERT(reduced_precision_vector_math().*op.function.interpreted == generated,
                          "generated ", op.name, " would call another function than the interpreter's");
    TORCH_INTERNAL_ASSERT(!op.compiled_in_float32 || vector_math().*op.function.interpreted == generated,
                          "generated float32 ", op.name, " would call another function than the interpreter's");
  }
}

}  // namespace

const char* const kPointwiseKernelSymbol = "torch_tpu_pointwise_kernel";

bool codegen_supports(const PointwiseProgram& program) {
  for (const PointwiseInstruction& instruction : program.instructions) {
    if (instruction.dtype == c10::kFloat && !pointwise_op(instruction.opcode).compiled_in_float32) return false;
  }
  if (program.strided && static_cast<int64_t>(program.shape.size()) > kMaxStridedKernelDims) return false;
  const auto generated = [](c10::ScalarType dtype) {
    return dtype == c10::kFloat || dtype == c10::kBFloat16;
  };
  for (const PointwiseRegister& r : program.registers) {
    if (!generated(r.dtype)) return false;
  }
  for (const PointwiseInstruction& instruction : program.instructions) {
    if (!generated(instruction.dtype)) return false;
  }
  return true;
}

namespace {

// How a generated loop addresses one register (a loaded or stored tensor). Flat programs index
// every register by the element number `i`. Strided programs run row by row over the
// iteration shape's last dim: a register is `p<k>`, its address at the row's start, and `j`
// the element in the row, `kStep` elements apart in memory (0: broadcast along the row).
struct Addressing {
  bool rows = false;
  std::vector<int> data_of;  // register -> index into `data` (-1: neither loaded nor stored)
  std::vector<int64_t> step_of;  // register -> last-dim step class (strided_step)

  std::string base(size_t r) const { return (rows ? "p" : "d") + std::to_string(data_of[r]); }
  std::string variable_step(size_t r) const { return "step" + std::to_string(data_of[r]); }
  // The element index of `position` (an expression) in register r's memory.
  std::string index(size_t r, const std::string& position) const {
    if (!rows) return position;
    switch (step_of[r]) {
      case 0: return "0";
      case 1: return position;
      case 2: return "2 * (" + position + ")";
      default: return variable_step(r) + " * (" + position + ")";
    }
  }
};

const char* type_of(c10::ScalarType dtype) { return dtype == c10::kBFloat16 ? "bf16" : "f32"; }

std::string tile_position(const Addressing& at, int t) {
  return std::string(at.rows ? "j" : "i") + " + " + std::to_string(t) + " * kLanes";
}

// One step of the loop over `tiles` vectors (or one element when tiles == 0): loads, the
// instructions, stores.
void emit_step(std::ostringstream& out, const PointwiseProgram& program, const Addressing& at, int tiles) {
  const bool scalar = tiles == 0;
  const int count = scalar ? 1 : tiles;
  const auto value = [](int buffer, int t, bool scalar) {
    return "b" + std::to_string(buffer) + (scalar ? "" : "_" + std::to_string(t));
  };
  for (int b = 0; b < program.buffers; ++b) {
    out << (scalar ? "    float" : "    vf");
    for (int t = 0; t < count; ++t) out << (t ? ", " : " ") << value(b, t, scalar);
    out << ";\n";
  }
  for (size_t r = 0; r < program.registers.size(); ++r) {
    const PointwiseRegister& reg = program.registers[r];
    if (!reg.loaded) continue;
    const std::string type = type_of(reg.dtype);
    for (int t = 0; t < count; ++t) {
      out << "    " << value(reg.buffer, t, scalar) << " = ";
      if (scalar) {
        out << "load_" << type << "(" << at.base(r) << ", " << at.index(r, at.rows ? "j" : "i") << ");\n";
      } else if (!at.rows || at.step_of[r] == 1) {
        out << "vload_" << type << "(" << at.base(r) << ", " << tile_position(at, t) << ");\n";
      } else if (at.step_of[r] == 0) {
        out << "bc(load_" << type << "(" << at.base(r) << ", 0));\n";
      } else if (at.step_of[r] == 2) {
        out << "vload_" << type << "_step2(" << at.base(r) << ", " << at.index(r, tile_position(at, t)) << ");\n";
      } else {  // lane by lane
        out << "[&] { vf x; for (int l = 0; l < kLanes; ++l) x[l] = load_" << type << "(" << at.base(r)
            << ", " << at.index(r, tile_position(at, t) + " + l") << "); return x; }();\n";
      }
    }
  }
  bool declared_function_values = false;
  for (const PointwiseInstruction& instruction : program.instructions) {
    const bool round = instruction.dtype == c10::kBFloat16 && !program.excess_precision;
    if (scalar) {
      const std::string computed = expression(instruction, -1);
      out << "    b" << instruction.output << " = " << (round ? "round_bf16(" + computed + ")" : computed) << ";\n";
      continue;
    }
    if (const PointwiseFunction& f = pointwise_op(instruction.opcode).function; f.generated != nullptr) {
      if (!declared_function_values) {
        out << "    alignas(64) char fv[" << count << " * sizeof(vf)];\n";
        declared_function_values = true;
      }
      out << vector_function_call(instruction, f, count);
    }
    for (int t = 0; t < count; ++t) {
      const std::string computed = expression(instruction, t);
      out << "    b" << instruction.output << "_" << t << " = "
          << (round ? "vround_bf16(" + computed + ")" : computed) << ";\n";
    }
  }
  for (size_t r = 0; r < program.registers.size(); ++r) {
    const PointwiseRegister& reg = program.registers[r];
    if (!reg.stored) continue;
    const std::string type = type_of(reg.dtype);
    for (int t = 0; t < count; ++t) {
      if (scalar) {
        out << "    store_" << type << "(" << at.base(r) << ", " << at.index(r, at.rows ? "j" : "i")
            << ", " << value(reg.buffer, t, true) << ");\n";
      } else if (!at.rows || at.step_of[r] == 1) {
        out << "    vstore_" << type << "(" << at.base(r) << ", " << tile_position(at, t) << ", "
            << value(reg.buffer, t, false) << ");\n";
      } else {  // lane by lane (a written tensor is never broadcast: step 0 cannot occur)
        out << "    for (int l = 0; l < kLanes; ++l) store_" << type << "(" << at.base(r) << ", "
            << at.index(r, tile_position(at, t) + " + l") << ", " << value(reg.buffer, t, false) << "[l]);\n";
      }
    }
  }
}

// The loop of a strided program: rows [begin, end) of the iteration shape's last dim, from
// `geometry` (ndim, the iteration shape, then each data register's element strides over it).
void emit_rows_loop(std::ostringstream& out, const PointwiseProgram& program, const Addressing& at) {
  out << "  const int64_t ndim = geometry[0];\n  const int64_t* shape = geometry + 1;\n"
         "  const int64_t inner = shape[ndim - 1];\n";
  for (size_t r = 0; r < program.registers.size(); ++r) {
    if (at.data_of[r] < 0) continue;
    const std::string k = std::to_string(at.data_of[r]);
    out << "  const int64_t* strides" << k << " = geometry + 1 + ndim * " << (at.data_of[r] + 1) << ";\n";
    if (at.step_of[r] < 0) out << "  const int64_t step" << k << " = strides" << k << "[ndim - 1];\n";
  }
  // The row's multi-index over the outer dims and each register's offset: computed by
  // division for the first row, then carried from row to row.
  out << "  int64_t index[" << kMaxStridedKernelDims << "];\n  int64_t rest = begin;\n"
         "  for (int64_t d = ndim - 2; d >= 0; --d) {\n    index[d] = rest % shape[d];\n    rest /= shape[d];\n  }\n";
  const auto for_each_data = [&](const std::string& line) {  // `line` with K for the register
    for (size_t r = 0; r < program.registers.size(); ++r) {
      if (at.data_of[r] < 0) continue;
      std::string code = line;
      for (size_t k = code.find('K'); k != std::string::npos; k = code.find('K', k)) {
        code.replace(k, 1, std::to_string(at.data_of[r]));
      }
      out << code;
    }
  };
  for_each_data("  int64_t offsetK = 0;\n");
  out << "  for (int64_t d = 0; d + 1 < ndim; ++d) {\n";
  for_each_data("    offsetK += index[d] * stridesK[d];\n");
  out << "  }\n  for (int64_t row = begin; row < end; ++row) {\n";
  for (size_t r = 0; r < program.registers.size(); ++r) {
    if (at.data_of[r] < 0) continue;
    const std::string k = std::to_string(at.data_of[r]);
    out << "    char* const p" << k << " = d" << k << " + offset" << k << " * "
        << c10::elementSize(program.registers[r].dtype) << ";\n";
  }
  out << "    int64_t j = 0;\n    for (; j + " << kTiles << " * kLanes <= inner; j += " << kTiles << " * kLanes) {\n";
  emit_step(out, program, at, kTiles);
  out << "    }\n    for (; j + kLanes <= inner; j += kLanes) {\n";
  emit_step(out, program, at, 1);
  out << "    }\n    for (; j < inner; ++j) {\n";
  emit_step(out, program, at, 0);
  out << "    }\n    for (int64_t d = ndim - 2; d >= 0; --d) {\n      ++index[d];\n";
  for_each_data("      offsetK += stridesK[d];\n");
  out << "      if (index[d] < shape[d]) break;\n      index[d] = 0;\n";
  for_each_data("      offsetK -= shape[d] * stridesK[d];\n");
  out << "    }\n  }\n";
}

}  // namespace

std::string pointwise_kernel_source(const PointwiseProgram& program) {
  static const bool checked = (check_generated_functions(), true);
  (void)checked;
  std::ostringstream out;
  out << kPrelude << "extern \"C\" void " << kPointwiseKernelSymbol
      << "(char* const* data, const float* constants, int64_t begin, int64_t end, const VectorMath* math, "
         "const int64_t* geometry) {\n";
  Addressing at;
  at.rows = program.strided;
  at.data_of.assign(program.registers.size(), -1);
  at.step_of.assign(program.registers.size(), 1);
  int next_data = 0;
  for (size_t r = 0; r < program.registers.size(); ++r) {
    const PointwiseRegister& reg = program.registers[r];
    if (!reg.loaded && !reg.stored) continue;
    at.data_of[r] = next_data++;
    at.step_of[r] = strided_step(reg);
    out << "  char* const d" << at.data_of[r] << " = data[" << at.data_of[r] << "];\n";
  }
  for (size_t c = 0; c < program.constants.size(); ++c) {
    out << "  const float c" << c << " = constants[" << c << "];\n";
  }
  if (at.rows) {
    emit_rows_loop(out, program, at);
  } else {
    // Elements [begin, end): kTiles vectors per step, then one by one.
    out << "  int64_t i = begin;\n  for (; i + " << kTiles << " * kLanes <= end; i += " << kTiles << " * kLanes) {\n";
    emit_step(out, program, at, kTiles);
    out << "  }\n  for (; i < end; ++i) {\n";
    emit_step(out, program, at, 0);
    out << "  }\n";
  }
  out << "}\n";
  return out.str();
}

PointwiseKernelFn PointwiseKernelSlot::ready(const PointwiseProgram& program) const {
  if (!requested_.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (kernel_ == nullptr || kernel_->symbol() == nullptr) return nullptr;
  if (structure_ != program.structure()) return nullptr;
  return reinterpret_cast<PointwiseKernelFn>(kernel_->symbol());
}

void PointwiseKernelSlot::interpreted(const PointwiseProgram& program, int64_t nanoseconds) {
  if (!codegen_enabled() || requested_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (requested_.load(std::memory_order_relaxed)) return;
  interpreted_ns_ += nanoseconds;
  ++interpreted_runs_;
  const bool hot = interpreted_ns_ >= codegen_after_ns() ||
                   (interpreted_runs_ >= kHotRuns && interpreted_ns_ >= kHotRunsMinimumNs);
  if (!hot || !codegen_supports(program)) return;
  structure_ = program.structure();
  kernel_ = compile_kernel(pointwise_kernel_source(program), kPointwiseKernelSymbol);
  requested_.store(true, std::memory_order_release);
}

int64_t compiled_kernel_runs() { return compiled_runs.load(std::memory_order_relaxed); }

void count_compiled_kernel_run() { compiled_runs.fetch_add(1, std::memory_order_relaxed); }

}  // namespace torch_tpu::executors::host
