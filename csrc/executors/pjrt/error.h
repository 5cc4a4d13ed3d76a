// PJRT failures as C++ exceptions (torch-free). Every PJRT_Error a plugin returns becomes a
// PjrtError carrying the plugin's message and status code; loading problems (no plugin, wrong
// version, missing entry) are PluginError. Both are runtime::RuntimeError, so the PyTorch layer
// maps them to RuntimeError like every other runtime failure.
#pragma once

#include <string_view>

#include <string>

#include "executors/pjrt/pjrt_c_api.h"
#include "runtime/status.h"

namespace torch_tpu::executors::pjrt {

// A call into the plugin failed. what(): "<call> failed: <CODE>: <plugin's message>".
class PjrtError : public runtime::RuntimeError {
 public:
  PjrtError(const std::string& call, capi::ErrorCode code, const std::string& message);
  capi::ErrorCode code() const { return code_; }
  // The plugin's own message, without our prefix.
  const std::string& plugin_message() const { return plugin_message_; }

 private:
  capi::ErrorCode code_;
  std::string plugin_message_;
};

// A plugin that cannot be used: not found, not loadable, too old, or lacking an entry we call.
class PluginError : public runtime::RuntimeError {
 public:
  using runtime::RuntimeError::RuntimeError;
};

// "INVALID_ARGUMENT" for kInvalidArgument; "code 42" for a value outside the ABI's list.
std::string error_code_name(capi::ErrorCode code);

// Takes ownership of `error` (nullptr: success, returns). Otherwise reads its code and message,
// destroys it and throws PjrtError naming `call`.
void throw_if_error(const capi::Api& api, capi::Error* error, const char* call);
// For destructors, which cannot throw: frees `error` (nullptr: nothing to do) without reading it.
void drop_error(const capi::Api& api, capi::Error* error);

// A PJRT_Program over the StableHLO module `mlir` (text or bytecode), which must outlive it.
capi::Program mlir_program(std::string_view mlir);

// An argument struct of the C API: struct_size set, everything else zero (no extensions).
template <typename Args>
Args make_args() {
  Args args{};
  args.struct_size = sizeof(Args);
  return args;
}

}  // namespace torch_tpu::executors::pjrt
