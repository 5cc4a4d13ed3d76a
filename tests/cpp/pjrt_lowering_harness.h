// The harness the PJRT lowering GoogleTests share: one op under test as a one-node program over
// operands filled with an exact pattern (or given values), compiled and run on the CPU plugin
// (PjrtExecutorTest), its outputs read back as doubles and compared with PyTorch's values.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pjrt_executor_fixture.h"

namespace torch_tpu::executors::pjrt::testing {

// The pattern (((i * 7 + seed * 3) % 11) - 5) / 4: exact in every floating dtype.
inline double pattern_value(size_t i, int seed) {
  return static_cast<double>(static_cast<int>((i * 7 + static_cast<size_t>(seed) * 3) % 11) - 5) * 0.25;
}

inline int64_t numel(const std::vector<int64_t>& sizes) {
  int64_t count = 1;
  for (const int64_t size : sizes) count *= size;
  return count;
}

// The pattern of `seed` over a tensor of `sizes`, each value times `scale`.
inline std::vector<double> pattern(const std::vector<int64_t>& sizes, int seed, double scale = 1.0) {
  std::vector<double> values;
  for (int64_t i = 0; i < numel(sizes); ++i) values.push_back(pattern_value(static_cast<size_t>(i), seed) * scale);
  return values;
}

// One operand of an op under test: its dtype, sizes and the pattern seed of its values.
struct Operand {
  ir::DType dtype;
  std::vector<int64_t> sizes;
  int seed = 0;
  std::vector<double> values = {};  // overrides the pattern when not empty
};

inline float bf16_to_float(uint16_t bits) {
  const uint32_t widened = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &widened, 4);
  return value;
}

// One node `op` over external inputs (one storage each); each output is a created, live-out
// storage, or an absent return (nullopt: a gradient output_mask does not ask for). `args`
// builds the node's arguments from the inputs' tensor arguments.
class OneOpLoweringTest : public PjrtExecutorTest {
 protected:
  using ArgsOf = std::function<std::vector<ir::Argument>(const std::vector<ir::Argument>&)>;
  using Outputs = std::vector<std::optional<ir::TensorType>>;

  // Runs the program (Scalar arguments' run-time values in `scalars`) and returns each present
  // output as doubles.
  std::vector<std::vector<double>> run_op(const std::string& op, const std::vector<Operand>& inputs,
                                          const ArgsOf& args, const Outputs& outputs,
                                          const std::vector<ScalarValue>& scalars = {}) {
    const ir::Program program = build(op, inputs, args, outputs);
    std::vector<runtime::DeviceAddress> storages;
    for (const Operand& input : inputs) storages.push_back(upload_operand(input));
    std::vector<ir::TensorType> present;
    for (const auto& out : outputs) {
      if (!out) continue;
      present.push_back(*out);
      storages.push_back(out->extent_bytes() == 0 ? 0 : executor_->allocate(0, out->extent_bytes(), 0));
    }
    executor_->run(executor_->compile(program), bind(storages, scalars), stream_);
    std::vector<std::vector<double>> results;
    for (size_t o = 0; o < present.size(); ++o) {
      results.push_back(download_as_doubles(storages[inputs.size() + o], present[o]));
    }
    return results;
  }

  // The NotSupported message compiling the program raises ("" when it compiles).
  std::string refusal(const std::string& op, const std::vector<Operand>& inputs, const ArgsOf& args,
                      const Outputs& outputs) {
    try {
      executor_->compile(build(op, inputs, args, outputs));
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "";
  }

 private:
  static ir::Program build(const std::string& op, const std::vector<Operand>& inputs, const ArgsOf& args,
                           const Outputs& outputs) {
    ir::Program program;
    std::vector<ir::Argument> tensors;
    std::vector<ir::StorageAccess> accesses;
    for (const Operand& input : inputs) {
      const ir::TensorType type = ir::testing::row_major(input.dtype, input.sizes);
      const ir::StorageId s = program.add_storage(type.extent_bytes(), true);
      tensors.push_back(ir::Argument::tensor(program.add_input(type, s)));
      accesses.push_back({s, ir::Access::kRead});
    }
    std::vector<ir::StorageId> written;
    for (const auto& out : outputs) {
      if (!out) continue;
      written.push_back(program.add_storage(out->extent_bytes(), false, /*live_out=*/true));
      accesses.push_back({written.back(), ir::Access::kWrite});
    }
    program.add_node(ir::testing::make_node(op, args(tensors), accesses));
    size_t next = 0;
    for (const auto& out : outputs) {
      if (out) {
        program.add_return(*out, written[next++]);
      } else {
        program.nodes.back().returns.push_back(ir::Argument::none());
      }
    }
    return program;
  }

  runtime::DeviceAddress upload_operand(const Operand& input) {
    const std::vector<double> values = input.values.empty() ? pattern(input.sizes, input.seed) : input.values;
    switch (input.dtype) {
      case ir::DType::kFloat32: return upload(std::vector<float>(values.begin(), values.end()));
      case ir::DType::kFloat64: return upload(values);
      case ir::DType::kInt64: return upload(std::vector<int64_t>(values.begin(), values.end()));
      case ir::DType::kBFloat16: {
        std::vector<uint16_t> bits;
        for (const double v : values) bits.push_back(to_bf16(static_cast<float>(v)));
        return upload(bits);
      }
      default: ADD_FAILURE() << "no upload for that dtype"; return 0;
    }
  }

  std::vector<double> download_as_doubles(runtime::DeviceAddress address, const ir::TensorType& type) {
    const auto count = static_cast<size_t>(numel(type.sizes));
    if (count == 0) return {};
    switch (type.dtype) {
      case ir::DType::kFloat32: { const auto v = download<float>(address, count); return {v.begin(), v.end()}; }
      case ir::DType::kFloat64: return download<double>(address, count);
      case ir::DType::kInt64: { const auto v = download<int64_t>(address, count); return {v.begin(), v.end()}; }
      case ir::DType::kBFloat16: {
        std::vector<double> values;
        for (const uint16_t bits : download<uint16_t>(address, count)) values.push_back(bf16_to_float(bits));
        return values;
      }
      default: ADD_FAILURE() << "no download for that dtype"; return {};
    }
  }
};

// Each element within `relative` of PyTorch's (and 1e-6 absolute near zero); NaN where it is.
inline void expect_near(const std::vector<double>& actual, const std::vector<double>& expected, double relative,
                        const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << what << " element " << i << ": " << actual[i];
      continue;
    }
    EXPECT_NEAR(actual[i], expected[i], relative * std::abs(expected[i]) + 1e-6) << what << " element " << i;
  }
}

}  // namespace torch_tpu::executors::pjrt::testing
