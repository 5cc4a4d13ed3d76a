// Execution modes (DESIGN §1) as policy objects. Code that behaves differently per mode asks
// the current policy a question (does the host wait for each op? are ops deferred into
// programs?) instead of comparing mode names, so a new mode is one policy file plus a line in
// mode.cpp's table. The modes: Strict runs ops asynchronously on the chip's queue; Debug waits
// for each op, so errors surface at the op that caused them; Fused (DeferAndFuse) records ops
// on each stream until a sync point flushes them as a program (engine/program.h).
#pragma once

#include <string>
#include <vector>

namespace torch_tpu::engine {

class ModePolicy {
 public:
  virtual ~ModePolicy() = default;
  // The name set_mode takes and get_mode answers ("strict").
  virtual const char* name() const = 0;
  // Other names set_mode accepts for it.
  virtual std::vector<std::string> aliases() const { return {}; }

  // Launch: the host waits for each op it issues and raises its error there.
  virtual bool waits_for_each_op() const { return false; }
  // Describe: ops are recorded for a planner and kept pending until a flush point, instead of
  // queued one by one.
  virtual bool defers_ops() const { return false; }
  // Allocate: a new buffer gets chip memory only when a task first reaches its bytes.
  virtual bool allocates_lazily() const { return false; }
  // Defer: a stream's pending ops flush at the size bounds (engine/deferral.h), so that the
  // chip starts on a long op stream while the host records the rest.
  virtual bool bounds_program_size() const { return true; }
  // Flush: the end of a backward pass is a flush point (the backward graph becomes a program).
  virtual bool flushes_after_backward() const { return false; }
  // Autograd keeps recipes of cheap pointwise results instead of the results
  // (ops/saved_recipes.h), where TORCH_TPU_FUSED_RECOMPUTE allows.
  virtual bool recomputes_saved_results() const { return false; }
  // Every op records the Python line that issued it, whatever set_record_python_lines says.
  virtual bool always_records_issue_sites() const { return false; }
  // Floating outputs are checked for NaN/Inf after each op when set_check_nans(True).
  virtual bool checks_nans_when_enabled() const { return false; }
  // A stream worker runs queued work beside the host, so a host that ran the queue itself for
  // long frees its OpenMP team rather than letting it spin on the worker's core.
  virtual bool host_runs_beside_worker() const { return true; }
};

// The current policy: the calling thread's compiled-graph policy while a CompiledGraphScope
// lives on it, else the process's mode. The first call reads TORCH_TPU_MODE (a mode name), then
// TPU_DEFER_AND_FUSE=1 (fused) and TPU_LAUNCH_BLOCKING=1 (debug). Thread-safe.
const ModePolicy& current_policy();
// The process's mode, whatever scope the calling thread is in.
const ModePolicy& process_policy();

// While one lives, the calling thread's ops are recorded as a compiled graph's
// (engine/modes/compiled_graph_mode.h), whatever the process's mode; other threads keep it.
// Scopes nest. Ending one flushes nothing: the caller flushes the streams the graph used, so
// that its ops end one program.
class CompiledGraphScope {
 public:
  CompiledGraphScope();
  ~CompiledGraphScope();
  CompiledGraphScope(const CompiledGraphScope&) = delete;
  CompiledGraphScope& operator=(const CompiledGraphScope&) = delete;
};
// How many CompiledGraphScopes live on the calling thread.
int compiled_graph_depth();
// Selects the mode named `name` (or one of its aliases); throws c10::ValueError listing the
// accepted names otherwise. Callers synchronize the chips first (pending work belongs to the
// old mode).
void set_mode(const std::string& name);
// Every registered mode's name, in registration order.
std::vector<std::string> mode_names();

// Debug checks of floating outputs for NaN/Inf (modes that checks_nans_when_enabled).
// Initialised from TORCH_TPU_CHECK_NANS=1.
bool check_nans_enabled();
void set_check_nans(bool enabled);

}  // namespace torch_tpu::engine
