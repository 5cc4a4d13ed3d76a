// A stand-in PJRT plugin for the loader's tests: exports GetPjrtApi with a table whose version,
// size and behaviour come from compile definitions, so each variant is its own library:
//   FAKE_PJRT_MAJOR, FAKE_PJRT_MINOR  the API version it reports
//   FAKE_PJRT_SHORT_TABLE             the table ends before PJRT_Client_Create
//   FAKE_PJRT_INIT_FAILS              PJRT_Plugin_Initialize returns a FAILED_PRECONDITION error
#include <cstddef>
#include <string>

#include "executors/pjrt/pjrt_c_api.h"

namespace capi = torch_tpu::executors::pjrt::capi;

// Our PJRT_Error: the plugin defines what it is.
struct torch_tpu::executors::pjrt::capi::Error {
  capi::ErrorCode code;
  std::string message;
};

namespace {

void destroy_error(capi::ErrorDestroyArgs* args) { delete args->error; }

void error_message(capi::ErrorMessageArgs* args) {
  args->message = args->error->message.data();
  args->message_size = args->error->message.size();
}

capi::Error* error_code(capi::ErrorGetCodeArgs* args) {
  args->code = args->error->code;
  return nullptr;
}

capi::Error* initialize(capi::PluginInitializeArgs*) {
#ifdef FAKE_PJRT_INIT_FAILS
  return new capi::Error{capi::ErrorCode::kFailedPrecondition, "fake plugin refuses to start"};
#else
  return nullptr;
#endif
}

capi::Error* create_client(capi::ClientCreateArgs*) {
  return new capi::Error{capi::ErrorCode::kNotFound, "fake plugin has no devices"};
}

capi::Error* destroy_client(capi::ClientDestroyArgs*) { return nullptr; }

capi::Api make_api() {
  capi::Api api{};
#ifdef FAKE_PJRT_SHORT_TABLE
  api.struct_size = offsetof(capi::Api, client_create);
#else
  api.struct_size = sizeof(capi::Api);
#endif
  api.version.struct_size = sizeof(capi::ApiVersion);
  api.version.major_version = FAKE_PJRT_MAJOR;
  api.version.minor_version = FAKE_PJRT_MINOR;
  api.error_destroy = destroy_error;
  api.error_message = error_message;
  api.error_get_code = error_code;
  api.plugin_initialize = initialize;
  // Filled even in the short table: the loader must not read past struct_size.
  api.client_create = create_client;
  api.client_destroy = destroy_client;
  return api;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const capi::Api* GetPjrtApi() {
  static const capi::Api api = make_api();
  return &api;
}
