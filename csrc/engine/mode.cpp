#include "engine/mode.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include <c10/util/Exception.h>

#include "engine/modes/compiled_graph_mode.h"
#include "engine/modes/debug_mode.h"
#include "engine/modes/fused_mode.h"
#include "engine/modes/strict_mode.h"

namespace torch_tpu::engine {
namespace {

// The registered modes; the first is the default.
const std::vector<const ModePolicy*>& registered_modes() {
  static const StrictMode strict;
  static const DebugMode debug;
  static const FusedMode fused;
  static const std::vector<const ModePolicy*> modes{&strict, &debug, &fused};
  return modes;
}

const ModePolicy* find_mode(const std::string& name) {
  for (const ModePolicy* mode : registered_modes()) {
    if (name == mode->name()) return mode;
    for (const std::string& alias : mode->aliases()) {
      if (name == alias) return mode;
    }
  }
  return nullptr;
}

const ModePolicy& parse_mode(const std::string& name) {
  if (const ModePolicy* mode = find_mode(name)) return *mode;
  std::string accepted;
  for (const std::string& known : mode_names()) {
    accepted += (accepted.empty() ? "'" : ", '") + known + "'";
  }
  TORCH_CHECK_VALUE(false, "unknown tpu execution mode '", name, "': expected one of ", accepted);
}

bool env_is_one(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

const ModePolicy& mode_from_env() {
  if (const char* value = std::getenv("TORCH_TPU_MODE"); value && *value) return parse_mode(value);
  // Google's TorchTPU spells the two non-default modes this way.
  if (env_is_one("TPU_DEFER_AND_FUSE")) return parse_mode("fused");
  if (env_is_one("TPU_LAUNCH_BLOCKING")) return parse_mode("debug");
  return *registered_modes().front();
}

std::atomic<const ModePolicy*>& policy_slot() {
  static std::atomic<const ModePolicy*> policy{[] {
    return &mode_from_env();
  }()};
  return policy;
}

thread_local int t_compiled_graph_depth = 0;

const ModePolicy& compiled_graph_policy() {
  static const CompiledGraphMode policy;
  return policy;
}

std::atomic<bool>& check_nans_slot() {
  static std::atomic<bool> enabled{env_is_one("TORCH_TPU_CHECK_NANS")};
  return enabled;
}

}  // namespace

const ModePolicy& current_policy() {
  if (t_compiled_graph_depth > 0) return compiled_graph_policy();
  return process_policy();
}

const ModePolicy& process_policy() { return *policy_slot().load(std::memory_order_relaxed); }

CompiledGraphScope::CompiledGraphScope() { ++t_compiled_graph_depth; }
CompiledGraphScope::~CompiledGraphScope() { --t_compiled_graph_depth; }
int compiled_graph_depth() { return t_compiled_graph_depth; }

void set_mode(const std::string& name) {
  const ModePolicy& policy = parse_mode(name);
  policy_slot().store(&policy);
}


std::vector<std::string> mode_names() {
  std::vector<std::string> names;
  for (const ModePolicy* mode : registered_modes()) names.emplace_back(mode->name());
  return names;
}

bool check_nans_enabled() { return check_nans_slot().load(std::memory_order_relaxed); }
void set_check_nans(bool enabled) { check_nans_slot().store(enabled); }

}  // namespace torch_tpu::engine
