#include "executors/host/program_run.h"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>

#include <c10/util/Exception.h>

#include "engine/executable_cache.h"
#include "engine/metrics.h"
#include "engine/program_assembly.h"
#include "executors/host/fused_cluster.h"
#include "executors/host/host_op_work.h"
#include "executors/host/program_plan.h"
#include "ir/printer.h"

namespace torch_tpu::executors::host {
namespace {

using engine::description_of;
using engine::OpDescription;

// The executable cache's name for planned programs: apart from the host executor's compiled
// one-node programs ("host"), which a one-op flush has the structure of.
constexpr const char* kPlannedPrograms = "host:planned";

// A planned program as the engine's executable cache holds it.
struct HostProgram : Executable {
  explicit HostProgram(ProgramPlan plan) : plan(std::move(plan)) {}
  ProgramPlan plan;
};

// TORCH_TPU_DUMP_PROGRAMS=DIR: each newly planned program as IR text, then its plan, with
// its flush reason.
const char* dump_directory() {
  static const char* directory = std::getenv("TORCH_TPU_DUMP_PROGRAMS");
  return directory != nullptr && *directory != '\0' ? directory : nullptr;
}

void dump_program(const ir::Program& ir, const ProgramPlan& program, size_t ops,
                  const char* reason) {
  static std::atomic<int64_t> counter{0};
  const int64_t number = counter.fetch_add(1);
  std::ofstream out(std::string(dump_directory()) + "/program_" + std::to_string(number) + ".txt");
  out << "program " << number << ": " << ops << " ops, flushed by " << reason << "\n"
      << ir::to_text(ir) << "plan:\n" << program.dump;
}

// One run of a program. Each step is its own task on the stream, so a host that starts
// waiting takes over between steps (running the rest with its whole thread team) instead of
// waiting for the worker to finish the program on one thread. A step that fails throws,
// naming its op(s); the stream keeps the first error and runs the later steps, as in Strict.
class ProgramRun {
 public:
  ProgramRun(std::shared_ptr<const ProgramPlan> program, std::vector<engine::PendingOp> tasks)
      : program_(std::move(program)), tasks_(std::move(tasks)) {}

  const char* op_name(size_t step) const {
    const Step& s = program_->steps[step];
    return s.kind == Step::Kind::kCluster ? "tpu::fused_kernel" : tasks_[s.tasks.front()].op_name;
  }
  // Where a single op's step was issued (a cluster names each op's place in its error).
  const char* issued_at(size_t step) const {
    const Step& s = program_->steps[step];
    return s.kind == Step::Kind::kCluster ? nullptr : tasks_[s.tasks.front()].issued_at;
  }

  // Runs step `index`, then releases what the host dropped while its ops were pending (even
  // when the step fails: the buffers are dead either way).
  void run_step(size_t index) {
    try {
      run_ops(program_->steps[index]);
    } catch (...) {
      run_releases(index);
      throw;
    }
    run_releases(index);
  }

  bool has_releases(size_t index) const {
    const Step& step = program_->steps[index];
    for (size_t k = step.release_begin; k < step.release_end; ++k) {
      if (!tasks_[k].then.empty()) return true;
    }
    return false;
  }

  void run_releases(size_t index) {
    const Step& step = program_->steps[index];
    for (size_t k = step.release_begin; k < step.release_end; ++k) {
      for (runtime::Task& release : tasks_[k].then) release();
      tasks_[k].then.clear();
    }
  }

  // The counters, once every step has run.
  void finish() const {
    engine::count_program_run(program_->fused_kernels, program_->bytes_written, program_->bytes_avoided);
  }

 private:
  void run_ops(const Step& step) {
    if (step.kind == Step::Kind::kSingle) {
      const engine::PendingOp& task = tasks_[step.tasks.front()];
      try {
        task.task();
      } catch (const c10::Error& error) {  // named here, without the C++ backtrace
        throw runtime::AsyncOpError(task.op_name, error.what_without_backtrace(),
                                    /*out_of_memory=*/false, task.issued_at);
      }
      return;
    }
    std::vector<const FusibleOp*> ops;
    ops.reserve(step.tasks.size());
    for (const uint32_t k : step.tasks) {
      const OpDescription& description = *description_of(tasks_[k]);
      const HostOpWork& work = host_work_of(description);
      ops.push_back(step.lane >= 0 ? work.lanes[static_cast<size_t>(step.lane)].get()
                                   : work.fusible.get());
    }
    try {
      run_cluster(*step.cluster, ops);
    } catch (const c10::Error& error) {
      throw runtime::AsyncOpError(cluster_name(step), error.what_without_backtrace());
    } catch (const runtime::OutOfMemoryError& error) {
      throw runtime::AsyncOpError(cluster_name(step), error.what(), /*out_of_memory=*/true);
    } catch (const std::exception& error) {
      throw runtime::AsyncOpError(cluster_name(step), error.what());
    }
  }

  std::string cluster_name(const Step& step) const {
    std::string name = "fused kernel of";
    for (const uint32_t k : step.tasks) {
      name += std::string(" ") + tasks_[k].op_name + runtime::issued_at_note(tasks_[k].issued_at);
    }
    return name;
  }

  const std::shared_ptr<const ProgramPlan> program_;
  std::vector<engine::PendingOp> tasks_;
};


// Plans each flush's pending ops as a program (cached by structure) and returns its steps.
class HostProgramRunner final : public engine::ProgramRunner {
 public:
  std::vector<engine::PlannedTask> plan(runtime::Stream& stream,
                                        std::vector<engine::PendingOp>&& pending,
                                        const char* reason) override;
};

}  // namespace

engine::ProgramRunner& program_runner() {
  static HostProgramRunner runner;
  return runner;
}

std::vector<engine::PlannedTask> HostProgramRunner::plan(runtime::Stream&,
                                                         std::vector<engine::PendingOp>&& pending,
                                                         const char* reason) {
  const bool dumping = dump_directory() != nullptr;
  const ir::Program ir = engine::assemble_program(pending, /*with_issue_sites=*/dumping);
  const engine::ExecutableCache::Lookup found =
      engine::executable_cache().get_or_build(kPlannedPrograms, ir, [&] {
        auto made = std::make_shared<const HostProgram>(host::plan(pending));
        if (dumping) dump_program(ir, made->plan, pending.size(), reason);
        return made;
      });
  engine::count_flush(reason, static_cast<int64_t>(pending.size()), found.hit);
  // Shares the cached executable's ownership.
  std::shared_ptr<const ProgramPlan> program(found.executable,
                                             &static_cast<const HostProgram&>(*found.executable).plan);
  // The last task owns the run; the step tasks, which a stream always runs before it, hold a
  // plain pointer (small enough for std::function to store without a heap allocation each).
  auto owner = std::make_shared<ProgramRun>(program, std::move(pending));
  ProgramRun* run = owner.get();
  std::vector<engine::PlannedTask> planned;
  planned.reserve(program->steps.size() + 1);
  for (size_t step = 0; step < program->steps.size(); ++step) {
    if (program->steps[step].kind == Step::Kind::kSkip) {
      if (run->has_releases(step)) {
        planned.push_back({"tpu::release_buffer", [run, step] { run->run_releases(step); }});
      }
      continue;
    }
    planned.push_back(
        {run->op_name(step), [run, step] { run->run_step(step); }, run->issued_at(step)});
  }
  planned.push_back({"tpu::program_end", [owner] { owner->finish(); }});
  return planned;
}

}  // namespace torch_tpu::executors::host
