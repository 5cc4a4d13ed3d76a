#include "engine/mode.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include <c10/util/Exception.h>

#include "runtime/stream.h"

namespace torch_tpu::engine {
namespace {

bool env_is_one(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

ExecutionMode mode_from_env() {
  if (const char* value = std::getenv("TORCH_TPU_MODE"); value && *value) return parse_mode(value);
  if (env_is_one("TPU_DEFER_AND_FUSE")) return ExecutionMode::kFused;
  return env_is_one("TPU_LAUNCH_BLOCKING") ? ExecutionMode::kDebug : ExecutionMode::kStrict;
}

std::atomic<ExecutionMode>& mode_slot() {
  static std::atomic<ExecutionMode> mode{[] {
    const ExecutionMode initial = mode_from_env();
    runtime::set_deferral(initial == ExecutionMode::kFused);
    return initial;
  }()};
  return mode;
}

std::atomic<bool>& check_nans_slot() {
  static std::atomic<bool> enabled{env_is_one("TORCH_TPU_CHECK_NANS")};
  return enabled;
}

}  // namespace

ExecutionMode current_mode() { return mode_slot().load(std::memory_order_relaxed); }
void set_mode(ExecutionMode mode) {
  mode_slot().store(mode);
  runtime::set_deferral(mode == ExecutionMode::kFused);
}

std::string mode_name(ExecutionMode mode) {
  switch (mode) {
    case ExecutionMode::kDebug: return "debug";
    case ExecutionMode::kFused: return "fused";
    case ExecutionMode::kStrict: break;
  }
  return "strict";
}

ExecutionMode parse_mode(const std::string& name) {
  if (name == "strict") return ExecutionMode::kStrict;
  if (name == "debug") return ExecutionMode::kDebug;
  if (name == "fused" || name == "defer_and_fuse") return ExecutionMode::kFused;
  TORCH_CHECK_VALUE(false, "unknown tpu execution mode '", name,
                    "': expected 'strict', 'debug' or 'fused'");
}

bool check_nans_enabled() { return check_nans_slot().load(std::memory_order_relaxed); }
void set_check_nans(bool enabled) { check_nans_slot().store(enabled); }

}  // namespace torch_tpu::engine
