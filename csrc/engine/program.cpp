#include "engine/program.h"

#include "engine/active_executor.h"
#include "engine/deferral.h"
#include "engine/executable_cache.h"
#include "engine/issue_sites.h"
#include "engine/launch.h"
#include "engine/metrics.h"
#include "engine/mode.h"
#include "engine/program_assembly.h"

namespace torch_tpu::engine {

void launch_described(int device, const char* op_name, runtime::Task task,
                      std::shared_ptr<const OpDescription> description, bool host_waits_next) {
  runtime::Stream& stream = current_stream(device);
  if (current_policy().defers_ops()) {
    // A non-fusible op is where a program may end early (kSoftPendingOps); a multi-tensor op
    // with lanes may fuse with the next one.
    const bool boundary = !host_waits_next && (description == nullptr || !description->may_fuse);
    defer(stream, PendingOp{op_name, current_issue_site(), std::move(task), std::move(description), {}},
          boundary, current_policy().bounds_program_size());
  } else {
    stream.enqueue(op_name, std::move(task), current_issue_site());
  }
  count_op_launched();
  if (current_policy().waits_for_each_op()) sync_stream(stream, "debug_mode");
}

std::shared_ptr<const executors::Executable> compile_one_node(
    const char* op_name, std::shared_ptr<const OpDescription> description) {
  std::vector<PendingOp> one;
  one.push_back(PendingOp{op_name, nullptr, nullptr, std::move(description), {}});
  const ir::Program program = assemble_program(one);
  return translate_errors(
      [&] { return executable_cache().get_or_compile(active_executor(), program).executable; });
}

BoundOneNode compile_and_bind_one_node(const char* op_name,
                                       std::shared_ptr<const OpDescription> description) {
  BoundOneNode bound;
  bound.host_storages = description->host_storages;
  std::vector<PendingOp> one;
  one.push_back(PendingOp{op_name, nullptr, nullptr, std::move(description), {}});
  const ir::Program program = assemble_program(one, false, &bound.bindings.storages);
  bound.bindings.scalars = ir::dynamic_scalars(program);
  bound.executable = translate_errors([&] {
    try {
      return executable_cache().get_or_compile(active_executor(), program).executable;
    } catch (const executors::NotSupported& error) {
      bound.not_supported = error.what();
      return std::shared_ptr<const executors::Executable>();
    }
  });
  return bound;
}

std::string check_expressible_alone(const char* op_name,
                                    std::shared_ptr<const OpDescription> description) {
  std::vector<PendingOp> one;
  one.push_back(PendingOp{op_name, nullptr, nullptr, std::move(description), {}});
  try {
    active_executor().check_expressible(assemble_program(one));
  } catch (const executors::NotSupported& error) {
    return error.what();
  }
  return {};
}

void launch_one_node(int device, std::shared_ptr<const executors::Executable> executable,
                     executors::RunBindings bindings) {
  runtime::Stream& stream = current_stream(device);
  bindings.issued_at = current_issue_site();
  active_executor().run(std::move(executable), std::move(bindings), stream);
  count_op_launched();
  count_one_node_run();
  if (current_policy().waits_for_each_op()) sync_stream(stream, "debug_mode");
}

}  // namespace torch_tpu::engine
