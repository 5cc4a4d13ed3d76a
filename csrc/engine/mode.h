// Execution modes (DESIGN §1): Strict runs ops asynchronously on the chip's queue; Debug waits
// for each op, so errors surface at the op that caused them (and NaN/Inf checks can run);
// Fused (DeferAndFuse) records ops on each stream until a sync point flushes them as a program
// (runtime/stream.h deferral, engine/program.h).
#pragma once

#include <string>

namespace torch_tpu::engine {

enum class ExecutionMode { kStrict = 0, kDebug = 1, kFused = 2 };

// Process-wide mode. The first call reads TORCH_TPU_MODE (strict|debug|fused), then
// TPU_DEFER_AND_FUSE=1 (-> fused) and TPU_LAUNCH_BLOCKING=1 (-> debug). Thread-safe. Callers
// of set_mode synchronize the chips first (pending work belongs to the old mode).
ExecutionMode current_mode();
void set_mode(ExecutionMode mode);
// "strict" / "debug" / "fused" ("defer_and_fuse" is accepted too); parse_mode throws
// c10::ValueError naming the accepted values.
std::string mode_name(ExecutionMode mode);
ExecutionMode parse_mode(const std::string& name);

// Debug mode only: check every op's floating outputs for NaN/Inf and raise naming the op.
// Initialised from TORCH_TPU_CHECK_NANS=1.
bool check_nans_enabled();
void set_check_nans(bool enabled);

}  // namespace torch_tpu::engine
