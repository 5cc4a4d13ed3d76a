// The fixture of the PJRT executor's GoogleTests: a PjrtExecutor on the real CPU plugin
// (skipped, saying why, when scripts/setup.sh has not installed it), a stream, and helpers to
// move values in and out of its buffers.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "executors/pjrt/pjrt_executor.h"
#include "pjrt_cpu_plugin.h"
#include "pjrt_test_programs.h"

namespace torch_tpu::executors::pjrt::testing {

using ir::ScalarValue;

class PjrtExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = cpu_plugin_missing(); !why.empty()) {
      GTEST_SKIP() << "CPU PJRT plugin not installed (run `make setup`): " << why;
    }
    executor_ = PjrtExecutor::create("cpu", search_dirs());
  }

  // A new slot holding `values`' bytes.
  template <typename T>
  runtime::DeviceAddress upload(const std::vector<T>& values) {
    const runtime::DeviceAddress address = executor_->allocate(0, values.size() * sizeof(T), 0);
    executor_->copy_to_device(values.data(), address, values.size() * sizeof(T), stream_);
    stream_.synchronize();
    return address;
  }

  template <typename T>
  std::vector<T> download(runtime::DeviceAddress address, size_t count) {
    std::vector<T> values(count);
    executor_->copy_to_host(address, values.data(), count * sizeof(T), stream_);
    stream_.synchronize();
    return values;
  }

  std::unique_ptr<PjrtExecutor> executor_;
  runtime::Stream stream_{0, 0, 0};
};

inline std::vector<float> iota_floats(size_t count, float start, float step) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = start + step * static_cast<float>(i);
  return values;
}

inline RunBindings bind(std::vector<runtime::DeviceAddress> storages,
                 std::vector<ScalarValue> scalars = {}) {
  RunBindings bindings;
  bindings.storages = std::move(storages);
  bindings.scalars = std::move(scalars);
  return bindings;
}

inline uint16_t to_bf16(float value) {  // exact for the values used here (8 significant bits)
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return static_cast<uint16_t>(bits >> 16);
}


}  // namespace torch_tpu::executors::pjrt::testing
