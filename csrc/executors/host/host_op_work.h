// What the host executor records for an op issued in fused mode (executors/executor.h's
// RecordedWork): how its fused loop engine can run the op on chunks. Opaque ops record none;
// they run as the task they were queued as.
#pragma once

#include <memory>
#include <vector>

#include "engine/program.h"
#include "executors/executor.h"
#include "executors/host/fusible_op.h"

namespace torch_tpu::executors::host {

struct HostOpWork : RecordedWork {
  // The op as the fused loop engine can run it (pointwise ops); null otherwise.
  std::shared_ptr<const FusibleOp> fusible;
  // A pointwise multi-tensor op (torch._foreach_*): its per-element ops, one per list element
  // ("lane"), which the planner may fuse lane by lane with the multi-tensor ops around it.
  std::vector<std::shared_ptr<const FusibleOp>> lanes;
};

// The host work of a described op; an op without any has none of either.
inline const HostOpWork& host_work_of(const engine::OpDescription& description) {
  static const HostOpWork kNone;
  const auto* work = static_cast<const HostOpWork*>(description.work.get());
  return work != nullptr ? *work : kNone;
}

}  // namespace torch_tpu::executors::host
