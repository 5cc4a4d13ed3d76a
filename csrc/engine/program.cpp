#include "engine/program.h"

#include "engine/deferral.h"
#include "engine/issue_sites.h"
#include "engine/launch.h"
#include "engine/metrics.h"
#include "engine/mode.h"

namespace torch_tpu::engine {

void launch_described(int device, const char* op_name, runtime::Task task,
                      std::shared_ptr<const OpDescription> description, bool host_waits_next) {
  runtime::Stream& stream = current_stream(device);
  if (current_policy().defers_ops()) {
    // A non-fusible op is where a program may end early (kSoftPendingOps); a multi-tensor op
    // with lanes may fuse with the next one.
    const bool boundary = !host_waits_next && (description == nullptr || !description->may_fuse);
    defer(stream, PendingOp{op_name, current_issue_site(), std::move(task), std::move(description), {}},
          boundary);
  } else {
    stream.enqueue(op_name, std::move(task), current_issue_site());
  }
  count_op_launched();
  if (current_policy().waits_for_each_op()) sync_stream(stream, "debug_mode");
}

}  // namespace torch_tpu::engine
