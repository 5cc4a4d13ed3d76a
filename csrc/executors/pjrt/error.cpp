#include "executors/pjrt/error.h"

#include <iterator>

namespace torch_tpu::executors::pjrt {

namespace {

// Indexed by capi::ErrorCode.
constexpr const char* kCodeNames[] = {
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED"};

}  // namespace

std::string error_code_name(capi::ErrorCode code) {
  const int value = static_cast<int>(code);
  if (value >= 0 && value < static_cast<int>(std::size(kCodeNames))) return kCodeNames[value];
  return "code " + std::to_string(value);
}

PjrtError::PjrtError(const std::string& call, capi::ErrorCode code, const std::string& message)
    : runtime::RuntimeError(call + " failed: " + error_code_name(code) + ": " + message),
      code_(code),
      plugin_message_(message) {}

void throw_if_error(const capi::Api& api, capi::Error* error, const char* call) {
  if (error == nullptr) return;
  capi::ErrorMessageArgs message{};
  message.struct_size = sizeof(message);
  message.error = error;
  api.error_message(&message);
  std::string text;
  if (message.message != nullptr) text.assign(message.message, message.message_size);

  capi::ErrorGetCodeArgs code{};
  code.struct_size = sizeof(code);
  code.error = error;
  // GetCode reports its own failure as a second error; then the code is unknown.
  if (capi::Error* code_error = api.error_get_code(&code)) {
    code.code = capi::ErrorCode::kUnknown;
    capi::ErrorDestroyArgs destroy{sizeof(capi::ErrorDestroyArgs), nullptr, code_error};
    api.error_destroy(&destroy);
  }

  capi::ErrorDestroyArgs destroy{sizeof(capi::ErrorDestroyArgs), nullptr, error};
  api.error_destroy(&destroy);
  throw PjrtError(call, code.code, text);
}

capi::Program mlir_program(std::string_view mlir) {
  static constexpr char kFormat[] = "mlir";
  auto program = make_args<capi::Program>();
  program.code = const_cast<char*>(mlir.data());  // only read by the compile
  program.code_size = mlir.size();
  program.format = kFormat;
  program.format_size = sizeof(kFormat) - 1;
  return program;
}

void drop_error(const capi::Api& api, capi::Error* error) {
  if (error == nullptr) return;
  capi::ErrorDestroyArgs destroy{sizeof(capi::ErrorDestroyArgs), nullptr, error};
  api.error_destroy(&destroy);
}

}  // namespace torch_tpu::executors::pjrt
