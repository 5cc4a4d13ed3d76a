#include "engine/program.h"

#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>

#include <c10/util/Exception.h>

#include "engine/issue_sites.h"
#include "engine/launch.h"
#include "engine/metrics.h"
#include "engine/mode.h"
#include "engine/program_assembly.h"
#include "engine/program_plan.h"
#include "executors/host/fused_cluster.h"
#include "ir/printer.h"
#include "ir/structural_hash.h"

namespace torch_tpu::engine {
namespace {

using executors::host::FusibleOp;

// The program cache: plans by program structure (ir::structural_key), shared by every stream
// and chip.
class ProgramCache {
 public:
  std::shared_ptr<const ProgramPlan> find(const ir::StructuralKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = plans_.find(key);
    return found == plans_.end() ? nullptr : found->second;
  }
  void store(ir::StructuralKey key, std::shared_ptr<const ProgramPlan> plan) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (plans_.size() >= kMaxPlans) plans_.clear();  // re-derivable: a full cache starts over
    plans_.emplace(std::move(key), std::move(plan));
  }

 private:
  static constexpr size_t kMaxPlans = 4096;
  std::mutex mutex_;
  std::unordered_map<ir::StructuralKey, std::shared_ptr<const ProgramPlan>, ir::StructuralKeyHash> plans_;
};

ProgramCache& program_cache() {
  static ProgramCache cache;
  return cache;
}

// TORCH_TPU_DUMP_PROGRAMS=DIR: each newly planned program as IR text, then its plan, with
// its flush reason.
const char* dump_directory() {
  static const char* directory = std::getenv("TORCH_TPU_DUMP_PROGRAMS");
  return directory != nullptr && *directory != '\0' ? directory : nullptr;
}

void dump_program(const ProgramPlan& program, const std::vector<runtime::PendingTask>& pending,
                  const char* reason) {
  static std::atomic<int64_t> counter{0};
  const int64_t number = counter.fetch_add(1);
  std::ofstream out(std::string(dump_directory()) + "/program_" + std::to_string(number) + ".txt");
  out << "program " << number << ": " << pending.size() << " ops, flushed by " << reason << "\n"
      << ir::to_text(assemble_program(pending, /*with_issue_sites=*/true)) << "plan:\n"
      << program.dump;
}

// One run of a program. Each step is its own task on the stream, so a host that starts
// waiting takes over between steps (running the rest with its whole thread team) instead of
// waiting for the worker to finish the program on one thread. A step that fails throws,
// naming its op(s); the stream keeps the first error and runs the later steps, as in Strict.
class ProgramRun {
 public:
  ProgramRun(std::shared_ptr<const ProgramPlan> program, std::vector<runtime::PendingTask> tasks)
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
    count_program_run(program_->fused_kernels, program_->bytes_written, program_->bytes_avoided);
  }

 private:
  void run_ops(const Step& step) {
    if (step.kind == Step::Kind::kSingle) {
      const runtime::PendingTask& task = tasks_[step.tasks.front()];
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
      ops.push_back(step.lane >= 0 ? description.lanes[static_cast<size_t>(step.lane)].get()
                                   : description.fusible.get());
    }
    try {
      executors::host::run_cluster(*step.cluster, ops);
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
  std::vector<runtime::PendingTask> tasks_;
};

const bool g_planner_installed = [] {
  runtime::set_planner(&plan_program);
  return true;
}();

}  // namespace

void launch_described(int device, const char* op_name, runtime::Task task,
                      std::shared_ptr<const OpDescription> description, bool host_waits_next) {
  runtime::Stream& stream = current_stream(device);
  // A non-fusible op is where a program may end early (runtime::kSoftPendingTasks); a
  // multi-tensor op with lanes may fuse with the next one.
  const bool boundary = !host_waits_next && (description == nullptr ||
                                             (description->fusible == nullptr && description->lanes.empty()));
  stream.enqueue(op_name, std::move(task), std::move(description), boundary,
                 current_issue_site());
  count_op_launched();
  if (current_policy().waits_for_each_op()) sync_stream(stream, "debug_mode");
}

std::vector<runtime::PlannedTask> plan_program(runtime::Stream&,
                                               std::vector<runtime::PendingTask>&& pending,
                                               const char* reason) {
  ir::StructuralKey key = ir::structural_key(assemble_program(pending));
  std::shared_ptr<const ProgramPlan> program = program_cache().find(key);
  const bool hit = program != nullptr;
  if (!hit) {
    program = std::make_shared<const ProgramPlan>(plan(pending));
    if (dump_directory() != nullptr) dump_program(*program, pending, reason);
    program_cache().store(std::move(key), program);
  }
  count_flush(reason, static_cast<int64_t>(pending.size()), hit);
  // The last task owns the run; the step tasks, which a stream always runs before it, hold a
  // plain pointer (small enough for std::function to store without a heap allocation each).
  auto owner = std::make_shared<ProgramRun>(program, std::move(pending));
  ProgramRun* run = owner.get();
  std::vector<runtime::PlannedTask> planned;
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

}  // namespace torch_tpu::engine
