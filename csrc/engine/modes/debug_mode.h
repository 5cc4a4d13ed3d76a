// Debug: each op finishes before it returns, so an error is raised by the call that caused it,
// naming the op and the Python line that issued it; NaN/Inf checks may run after each op.
#pragma once

#include "engine/mode.h"

namespace torch_tpu::engine {

class DebugMode final : public ModePolicy {
 public:
  const char* name() const override { return "debug"; }
  bool waits_for_each_op() const override { return true; }
  bool always_records_issue_sites() const override { return true; }
  bool checks_nans_when_enabled() const override { return true; }
  // The host runs every op itself right after issuing it: no worker runs beside it.
  bool host_runs_beside_worker() const override { return false; }
};

}  // namespace torch_tpu::engine
