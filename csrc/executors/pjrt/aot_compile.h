// Ahead-of-time compiles for a device topology this process does not run on (torch-free):
// libtpu compiles StableHLO for a TPU slice ("v5e:2x2") with no TPU present, and the compiled
// executable says what a run would cost there (XLA's cost analysis) and how much device memory
// it needs. python -m torch_tpu.tpu_report is built on it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "executors/pjrt/plugin.h"

namespace torch_tpu::executors::pjrt {

// What compiling one program for a topology reported.
struct AotReport {
  // XLA's cost analysis by property ("flops", "bytes accessed", "optimal_seconds", ...); empty
  // when the plugin has none (the CPU plugins: UNIMPLEMENTED).
  std::map<std::string, double> cost;
  // Device memory a run needs: arguments, outputs, outputs aliasing arguments, scratch, code.
  int64_t argument_bytes = 0;
  int64_t output_bytes = 0;
  int64_t alias_bytes = 0;
  int64_t temp_bytes = 0;
  int64_t generated_code_bytes = 0;
  double compile_seconds = 0.0;
  size_t serialized_bytes = 0;  // the plugin's serialized executable
};

// A topology of `plugin`'s platform, made without its devices. Thread-safe to compile on.
class Topology {
 public:
  // Creates the topology `name` ("v5e:2x2", "v6e:2x2", "v4:2x2x1" on libtpu). Throws PjrtError
  // (an unknown name) or PluginError (the plugin has no topology entries).
  Topology(std::shared_ptr<const Plugin> plugin, const std::string& name);
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  const std::string& name() const { return name_; }
  std::string platform_name() const;
  std::string platform_version() const;
  // Compiles the StableHLO module `mlir` for one device of the topology (1 replica, 1
  // partition) and reports on the executable. Throws PjrtError with the compiler's message.
  AotReport compile(std::string_view mlir) const;

 private:
  std::string platform_string(capi::Function<capi::TopologyDescriptionStringArgs> capi::Api::*entry,
                              const char* call) const;
  std::shared_ptr<const Plugin> plugin_;
  std::string name_;
  capi::TopologyDescription* topology_ = nullptr;
};

}  // namespace torch_tpu::executors::pjrt
