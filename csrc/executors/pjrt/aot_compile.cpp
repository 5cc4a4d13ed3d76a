#include "executors/pjrt/aot_compile.h"

#include <chrono>
#include <utility>

#include "executors/pjrt/compile_options.h"

namespace torch_tpu::executors::pjrt {
namespace {

// An executable compiled without a client, destroyed on scope exit.
class CompiledExecutable {
 public:
  CompiledExecutable(const Plugin& plugin, capi::Executable* executable)
      : plugin_(plugin), executable_(executable) {}
  ~CompiledExecutable() {
    auto args = make_args<capi::ExecutableDestroyArgs>();
    args.executable = executable_;
    drop_error(plugin_.api(), plugin_.api().executable_destroy(&args));
  }
  CompiledExecutable(const CompiledExecutable&) = delete;
  CompiledExecutable& operator=(const CompiledExecutable&) = delete;
  capi::Executable* get() const { return executable_; }

 private:
  const Plugin& plugin_;
  capi::Executable* executable_;
};

double number_of(const capi::NamedValue& value) {
  switch (value.type) {
    case capi::NamedValueType::kFloat:
      return value.float_value;
    case capi::NamedValueType::kInt64:
      return static_cast<double>(value.int64_value);
    case capi::NamedValueType::kBool:
      return value.bool_value ? 1.0 : 0.0;
    default:
      return 0.0;
  }
}

}  // namespace

Topology::Topology(std::shared_ptr<const Plugin> plugin, const std::string& name)
    : plugin_(std::move(plugin)), name_(name) {
  auto create = plugin_->entry(&capi::Api::topology_description_create,
                               "PJRT_TopologyDescription_Create");
  plugin_->entry(&capi::Api::topology_description_destroy, "PJRT_TopologyDescription_Destroy");
  auto args = make_args<capi::TopologyDescriptionCreateArgs>();
  args.topology_name = name_.data();
  args.topology_name_size = name_.size();
  throw_if_error(plugin_->api(), create(&args), "PJRT_TopologyDescription_Create");
  topology_ = args.topology;
}

Topology::~Topology() {
  if (topology_ == nullptr || Plugin::process_exiting()) return;
  auto args = make_args<capi::TopologyDescriptionDestroyArgs>();
  args.topology = topology_;
  drop_error(plugin_->api(), plugin_->api().topology_description_destroy(&args));
}

std::string Topology::platform_string(
    capi::Function<capi::TopologyDescriptionStringArgs> capi::Api::*entry, const char* call) const {
  auto get = plugin_->entry(entry, call);
  auto args = make_args<capi::TopologyDescriptionStringArgs>();
  args.topology = topology_;
  throw_if_error(plugin_->api(), get(&args), call);
  return std::string(args.value, args.value_size);
}

std::string Topology::platform_name() const {
  return platform_string(&capi::Api::topology_description_platform_name,
                         "PJRT_TopologyDescription_PlatformName");
}

std::string Topology::platform_version() const {
  return platform_string(&capi::Api::topology_description_platform_version,
                         "PJRT_TopologyDescription_PlatformVersion");
}

AotReport Topology::compile(std::string_view mlir) const {
  auto compile = plugin_->entry(&capi::Api::compile, "PJRT_Compile");
  const capi::Program program = mlir_program(mlir);
  const std::string options = compile_options_bytes();
  auto args = make_args<capi::CompileArgs>();
  args.topology = topology_;
  args.program = &program;
  args.compile_options = options.data();
  args.compile_options_size = options.size();
  AotReport report;
  const auto started = std::chrono::steady_clock::now();
  throw_if_error(plugin_->api(), compile(&args), "PJRT_Compile");
  report.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const CompiledExecutable executable(*plugin_, args.executable);

  auto cost = make_args<capi::ExecutableGetCostAnalysisArgs>();
  cost.executable = executable.get();
  const capi::Api& api = plugin_->api();
  capi::Error* cost_error = plugin_->entry(&capi::Api::executable_get_cost_analysis,
                                           "PJRT_Executable_GetCostAnalysis")(&cost);
  if (cost_error == nullptr) {
    for (size_t i = 0; i < cost.num_properties; ++i) {
      const capi::NamedValue& property = cost.properties[i];
      report.cost[std::string(property.name, property.name_size)] = number_of(property);
    }
  } else {
    drop_error(api, cost_error);  // a plugin without an analysis reports no cost
  }

  auto memory = make_args<capi::ExecutableGetCompiledMemoryStatsArgs>();
  memory.executable = executable.get();
  throw_if_error(api,
                 plugin_->entry(&capi::Api::executable_get_compiled_memory_stats,
                                "PJRT_Executable_GetCompiledMemoryStats")(&memory),
                 "PJRT_Executable_GetCompiledMemoryStats");
  report.argument_bytes = memory.argument_size_in_bytes;
  report.output_bytes = memory.output_size_in_bytes;
  report.alias_bytes = memory.alias_size_in_bytes;
  report.temp_bytes = memory.temp_size_in_bytes;
  report.generated_code_bytes = memory.generated_code_size_in_bytes;

  auto serialize = make_args<capi::ExecutableSerializeArgs>();
  serialize.executable = executable.get();
  throw_if_error(api,
                 plugin_->entry(&capi::Api::executable_serialize, "PJRT_Executable_Serialize")(&serialize),
                 "PJRT_Executable_Serialize");
  report.serialized_bytes = serialize.bytes_size;
  if (serialize.serialized_deleter != nullptr) serialize.serialized_deleter(serialize.serialized);
  return report;
}

}  // namespace torch_tpu::executors::pjrt
