#include "executors/host/pointwise_program.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <c10/util/accumulate.h>

#include "executors/host/pointwise_ops.h"

namespace torch_tpu::executors::host {
namespace {

bool floating(c10::ScalarType dtype) {
  return dtype == c10::kFloat || dtype == c10::kBFloat16 || dtype == c10::kHalf;
}

float read_scalar(const TensorSnapshot& snapshot) {
  const void* data = snapshot.cpu_view().data_ptr();
  switch (snapshot.dtype()) {
    case c10::kBFloat16: return static_cast<float>(*static_cast<const c10::BFloat16*>(data));
    case c10::kHalf: return static_cast<float>(*static_cast<const c10::Half*>(data));
    default: return *static_cast<const float*>(data);
  }
}

// The value a Scalar operand of `instruction` has in ATen's CPU kernel. add and sub (rsub too)
// convert their Scalars (a wrapped number, alpha) to the output dtype before computing in
// float, so a bf16 `x + 0.05` adds bf16(0.05); mul, div and the others keep them in float.
float as_kernel_scalar(const PointwiseInstruction& instruction, float value) {
  const bool converted = instruction.opcode == PointwiseOpcode::kAdd ||
                         instruction.opcode == PointwiseOpcode::kSub;
  if (!converted) return value;
  if (instruction.dtype == c10::kBFloat16) return static_cast<float>(c10::BFloat16(value));
  if (instruction.dtype == c10::kHalf) return static_cast<float>(c10::Half(value));
  return value;
}

// Whether no two in-range indices of a tensor reach the same element (sufficient test: the
// dims of size > 1, ordered by stride, each step over all of the previous ones).
bool no_internal_overlap(c10::IntArrayRef sizes, c10::IntArrayRef strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (|stride|, size)
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1) dims.emplace_back(std::abs(strides[d]), sizes[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t span = 1;  // elements covered by the dims so far
  for (const auto& [stride, size] : dims) {
    if (stride < span) return false;
    span = stride * size;
  }
  return true;
}

// `snapshot`'s element strides over the iteration `shape` (right-aligned, 0 where broadcast),
// or empty when it is row-major over `shape`.
std::vector<int64_t> iteration_strides(const TensorSnapshot& snapshot, c10::IntArrayRef shape) {
  const c10::IntArrayRef sizes = snapshot.sizes();
  const c10::IntArrayRef strides = snapshot.strides();
  const size_t lead = shape.size() - sizes.size();
  std::vector<int64_t> result(shape.size(), 0);
  bool row_major = sizes.size() == shape.size();
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    const bool present = d >= lead && sizes[d - lead] != 1;
    if (present) result[d] = strides[d - lead];
    if (shape[d] != 1 && result[d] != expected) row_major = false;
    expected *= shape[d];
  }
  return row_major ? std::vector<int64_t>{} : result;
}

// Assigns block buffers to registers: a buffer is reused once the value in it is dead, so a
// long chain runs in a few cache-resident buffers, not one per intermediate. Loaded and stored
// registers keep theirs for the whole block. Rewrites instructions to buffer numbers.
void assign_buffers(PointwiseProgram& program) {
  std::vector<PointwiseRegister>& registers = program.registers;
  std::vector<PointwiseInstruction>& instructions = program.instructions;
  const int count = static_cast<int>(registers.size());
  const int end = static_cast<int>(instructions.size());
  std::vector<int> last_use(static_cast<size_t>(count), -1);
  for (int r = 0; r < count; ++r) {
    if (registers[static_cast<size_t>(r)].stored || registers[static_cast<size_t>(r)].loaded) {
      last_use[static_cast<size_t>(r)] = end;
    }
  }
  for (int k = 0; k < end; ++k) {
    for (int r : instructions[static_cast<size_t>(k)].operands) {
      if (r >= 0) last_use[static_cast<size_t>(r)] = std::max(last_use[static_cast<size_t>(r)], k);
    }
    const int out = instructions[static_cast<size_t>(k)].output;
    last_use[static_cast<size_t>(out)] = std::max(last_use[static_cast<size_t>(out)], k);
  }
  std::vector<int> buffer_of(static_cast<size_t>(count), -1);
  std::vector<int> free_buffers;
  const auto assign = [&](int r) {
    if (buffer_of[static_cast<size_t>(r)] >= 0) return;
    if (free_buffers.empty()) {
      buffer_of[static_cast<size_t>(r)] = program.buffers++;
    } else {
      buffer_of[static_cast<size_t>(r)] = free_buffers.back();
      free_buffers.pop_back();
    }
  };
  const auto release = [&](int buffer) {
    if (std::find(free_buffers.begin(), free_buffers.end(), buffer) == free_buffers.end()) {
      free_buffers.push_back(buffer);
    }
  };
  for (int r = 0; r < count; ++r) {
    if (registers[static_cast<size_t>(r)].loaded) assign(r);
  }
  for (int k = 0; k < end; ++k) {
    PointwiseInstruction& instruction = instructions[static_cast<size_t>(k)];
    // Operands are read before the output is written, so an operand's buffer read for the
    // last time here may become the output's.
    for (int r : instruction.operands) {
      if (r >= 0 && last_use[static_cast<size_t>(r)] == k) release(buffer_of[static_cast<size_t>(r)]);
    }
    assign(instruction.output);
    const int out_buffer = buffer_of[static_cast<size_t>(instruction.output)];
    free_buffers.erase(std::remove(free_buffers.begin(), free_buffers.end(), out_buffer),
                       free_buffers.end());
    if (last_use[static_cast<size_t>(instruction.output)] == k) free_buffers.push_back(out_buffer);
    for (int& r : instruction.operands) {
      if (r >= 0) r = buffer_of[static_cast<size_t>(r)];
    }
    instruction.output = out_buffer;
  }
  for (int r = 0; r < count; ++r) registers[static_cast<size_t>(r)].buffer = buffer_of[static_cast<size_t>(r)];
}

}  // namespace

bool excess_precision() {
  static const bool enabled = [] {
    const char* value = std::getenv("TORCH_TPU_FUSED_EXCESS_PRECISION");
    return value != nullptr && std::string(value) == "1";
  }();
  return enabled;
}

bool pointwise_program_supports(const ClusterPlan& plan, const std::vector<const FusibleOp*>& ops) {
  for (const FusibleOp* op : ops) {
    const PointwiseExpression* expression = op->expression();
    if (expression == nullptr) return false;
    const PointwiseOpInfo& math = pointwise_op(expression->opcode);
    if (expression->operands.size() != static_cast<size_t>(math.arity)) return false;
    // Not flat: some tensor is strided or broadcast (a reduction's rows never get here: a
    // reduction has no register form).
    if (!plan.flat && !math.form_for(pointwise_takes_alpha(math, expression->alpha)).layout_independent) {
      return false;
    }
    for (const FusedTensor& tensor : op->tensors()) {
      if (!floating(tensor.snapshot->dtype())) return false;
      // Blocks run in parallel: a written tensor must not reach one element twice (ATen
      // rejects such in-place writes; the chunked path lets it say so).
      if (!plan.flat && tensor.written &&
          !no_internal_overlap(tensor.snapshot->sizes(), tensor.snapshot->strides())) {
        return false;
      }
    }
  }
  return true;
}

PointwiseProgram build_pointwise_program(const ClusterPlan& plan,
                                         const std::vector<const FusibleOp*>& ops) {
  PointwiseProgram program;
  program.excess_precision = excess_precision();
  program.shape = plan.shape;
  program.numel = 1;
  for (int64_t size : plan.shape) program.numel *= size;
  // A register is a tensor as the loop sees it: two views with one address but other strides
  // (a tensor and its transpose) are two registers.
  std::map<std::tuple<const void*, c10::ScalarType, std::vector<int64_t>>, int> register_of;
  const auto add_constant = [&](float value) {
    program.constants.push_back(value);
    return static_cast<int>(program.constants.size()) - 1;
  };
  for (size_t o = 0; o < ops.size(); ++o) {
    const PointwiseExpression& expression = *ops[o]->expression();
    const std::vector<FusedTensor>& tensors = ops[o]->tensors();
    const auto reg = [&](int tensor, bool written) {
      const TensorSnapshot& snapshot = *tensors[static_cast<size_t>(tensor)].snapshot;
      std::vector<int64_t> strides = plan.flat ? std::vector<int64_t>{}
                                               : iteration_strides(snapshot, plan.shape);
      auto key = std::make_tuple(snapshot.device_data(), snapshot.dtype(), strides);
      auto [found, added] =
          register_of.emplace(std::move(key), static_cast<int>(program.registers.size()));
      if (added) {
        PointwiseRegister fresh;
        fresh.device_data = snapshot.device_data();
        fresh.dtype = snapshot.dtype();
        fresh.loaded = !written;
        program.strided = program.strided || !strides.empty();
        fresh.strides = std::move(strides);
        program.registers.push_back(std::move(fresh));
      }
      PointwiseRegister& r = program.registers[static_cast<size_t>(found->second)];
      if (written && plan.accesses[o][static_cast<size_t>(tensor)].kind != ChunkAccess::kScratch) {
        r.stored = true;
      }
      return found->second;
    };
    PointwiseInstruction instruction;
    instruction.opcode = expression.opcode;
    instruction.dtype = tensors[static_cast<size_t>(expression.output)].snapshot->dtype();
    for (const PointwiseOperand& operand : expression.operands) {
      if (operand.tensor < 0) {
        instruction.operands.push_back(-1);
        instruction.constant_slots.push_back(
            add_constant(as_kernel_scalar(instruction, operand.constant)));
        continue;
      }
      const ClusterPlan::Access& access = plan.accesses[o][static_cast<size_t>(operand.tensor)];
      const TensorSnapshot& snapshot = *tensors[static_cast<size_t>(operand.tensor)].snapshot;
      // A single value broadcast is a constant; a larger broadcast (only in strided plans) is
      // a register with stride 0 along the dims it is broadcast over.
      if (access.kind == ChunkAccess::kWhole && c10::multiply_integers(snapshot.sizes()) == 1) {
        instruction.operands.push_back(-1);
        instruction.constant_slots.push_back(
            add_constant(as_kernel_scalar(instruction, read_scalar(snapshot))));
        continue;
      }
      instruction.operands.push_back(reg(operand.tensor, false));
      instruction.constant_slots.push_back(-1);
    }
    if (pointwise_takes_alpha(pointwise_op(expression.opcode), expression.alpha)) {
      instruction.alpha_slot = add_constant(as_kernel_scalar(instruction, expression.alpha));
    }
    instruction.output = reg(expression.output, true);
    program.instructions.push_back(std::move(instruction));
  }
  assign_buffers(program);
  return program;
}

int64_t strided_step(const PointwiseRegister& reg) {
  if (reg.strides.empty()) return 1;
  const int64_t step = reg.strides.back();
  return step == 0 || step == 1 || step == 2 ? step : -1;
}

std::vector<int32_t> PointwiseProgram::structure() const {
  std::vector<int32_t> words{excess_precision ? 1 : 0, strided ? 1 : 0, buffers,
                             static_cast<int32_t>(registers.size())};
  for (const PointwiseRegister& r : registers) {
    words.insert(words.end(), {static_cast<int32_t>(r.dtype), r.loaded ? 1 : 0, r.stored ? 1 : 0,
                               r.buffer, static_cast<int32_t>(strided_step(r))});
  }
  for (const PointwiseInstruction& instruction : instructions) {
    words.insert(words.end(), {static_cast<int32_t>(instruction.opcode), instruction.output,
                               static_cast<int32_t>(instruction.dtype), instruction.alpha_slot,
                               static_cast<int32_t>(instruction.operands.size())});
    for (size_t k = 0; k < instruction.operands.size(); ++k) {
      words.push_back(instruction.operands[k]);
      words.push_back(instruction.constant_slots[k]);
    }
  }
  return words;
}

}  // namespace torch_tpu::executors::host
