#include "engine/compiled_programs.h"

#include <exception>
#include <string>
#include <utility>

#include "engine/active_executor.h"
#include "engine/executable_cache.h"
#include "engine/metrics.h"
#include "engine/program.h"
#include "engine/program_assembly.h"
#include "runtime/status.h"

namespace torch_tpu::engine {
namespace {

// A run of `ops` as one program, or, if the executor cannot express them together, one per op.
void plan_programs(std::vector<PendingOp>& ops, const char* reason,
                   std::vector<PlannedTask>& planned) {
  executors::Executor& executor = active_executor();
  const auto add_run = [&](const std::vector<PendingOp>& program_ops, const char* name) {
    executors::RunBindings bindings;
    const ir::Program program = assemble_program(program_ops, false, &bindings.storages);
    bindings.scalars = ir::dynamic_scalars(program);
    try {
      const ExecutableCache::Lookup found = executable_cache().get_or_compile(executor, program);
      count_flush(reason, static_cast<int64_t>(program_ops.size()), found.hit);
      executors::Executor::PreparedRun run =
          executor.prepare_run(found.executable, std::move(bindings));
      planned.push_back({run.name, std::move(run.task), program_ops.front().issued_at});
      return true;
    } catch (const executors::NotSupported&) {
      if (program_ops.size() > 1) return false;
      throw;
    }
  };
  try {
    if (!add_run(ops, ops.front().op_name)) {
      for (PendingOp& op : ops) {
        std::vector<PendingOp> one;
        one.push_back(PendingOp{op.op_name, op.issued_at, nullptr, op.description, {}});
        add_run(one, op.op_name);
      }
    }
  } catch (const std::exception& error) {
    // A failed compile fails the program's run, raised at the next sync point naming it.
    const std::string message = error.what();
    planned.push_back({ops.front().op_name,
                       [message] { throw runtime::RuntimeError(message); },
                       ops.front().issued_at});
  }
  for (PendingOp& op : ops) {
    for (runtime::Task& then : op.then) planned.push_back({runtime::kReleaseTaskName, std::move(then)});
  }
  // The ops' descriptions may hold the last references to tensors, whose buffers are released
  // into this stream's pending list, locked during the flush: they are dropped by the stream.
  auto kept = std::make_shared<std::vector<PendingOp>>(std::move(ops));
  planned.push_back({runtime::kReleaseTaskName, [kept]() mutable { kept.reset(); }});
  ops.clear();
}

class CompiledProgramRunner final : public ProgramRunner {
 public:
  std::vector<PlannedTask> plan(runtime::Stream&, std::vector<PendingOp>&& pending,
                                const char* reason) override {
    std::vector<PlannedTask> planned;
    std::vector<PendingOp> program;
    for (PendingOp& op : pending) {
      if (op.description != nullptr) {
        program.push_back(std::move(op));
        continue;
      }
      if (!program.empty()) plan_programs(program, reason, planned);
      planned.push_back({op.op_name, std::move(op.task), op.issued_at});
      for (runtime::Task& then : op.then) planned.push_back({runtime::kReleaseTaskName, std::move(then)});
    }
    if (!program.empty()) plan_programs(program, reason, planned);
    return planned;
  }
};

}  // namespace

ProgramRunner& compiled_program_runner() {
  static CompiledProgramRunner runner;
  return runner;
}

}  // namespace torch_tpu::engine
