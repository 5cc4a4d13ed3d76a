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
#include <c10/util/hash.h>

#include "engine/issue_sites.h"
#include "engine/launch.h"
#include "engine/metrics.h"
#include "engine/mode.h"
#include "engine/program_plan.h"
#include "executors/host/fused_cluster.h"

namespace torch_tpu::engine {
namespace {

using executors::host::FusibleOp;
using Key = std::vector<int64_t>;

struct KeyHash {
  size_t operator()(const Key& key) const { return c10::hash<std::vector<int64_t>>()(key); }
};

// Numbers storages in first-seen order: an open-addressing table kept per thread. A program
// names hundreds of storages, and a node-based map allocated a node for each on every flush.
class StorageNumbering {
 public:
  // `most`: an upper bound on how many distinct storages will be numbered.
  void reset(size_t most) {
    size_t size = 64;
    while (size < 2 * most) size *= 2;
    slots_.assign(size, Slot{});
    next_ = 0;
  }
  int64_t number(const c10::StorageImpl* storage) {
    const size_t mask = slots_.size() - 1;
    // Fibonacci hashing of the address (allocations are 16-byte aligned: drop those bits).
    size_t i = (((reinterpret_cast<uintptr_t>(storage) >> 4) * 0x9E3779B97F4A7C15ull) >> 7) & mask;
    while (slots_[i].storage != nullptr && slots_[i].storage != storage) i = (i + 1) & mask;
    if (slots_[i].storage == nullptr) slots_[i] = Slot{storage, next_++};
    return slots_[i].number;
  }

 private:
  struct Slot {
    const c10::StorageImpl* storage = nullptr;
    int64_t number = 0;
  };
  std::vector<Slot> slots_;
  int64_t next_ = 0;
};

// The program's structure: each op's own structure, how ops share storages (numbered in order
// of first use), the offsets fused ops see them at, and which written storages are still
// referenced. Two flushes with equal keys get the same plan.
Key structural_key(const std::vector<runtime::PendingTask>& pending) {
  Key key;
  key.reserve(pending.size() * 16);
  size_t named = 0;
  for (const runtime::PendingTask& task : pending) {
    if (const OpDescription* description = description_of(task)) {
      named += description->storages.size();
      if (description->fusible) named += description->fusible->tensors().size();
      for (const auto& lane : description->lanes) named += lane->tensors().size();
    }
  }
  thread_local StorageNumbering numbering;
  numbering.reset(named);
  const auto number = [&](const c10::StorageImpl* storage) { return numbering.number(storage); };
  for (const runtime::PendingTask& task : pending) {
    const OpDescription* description = description_of(task);
    if (description == nullptr) {
      key.push_back(-1);
      key.push_back(static_cast<int64_t>(std::hash<std::string>()(task.op_name)));
      continue;
    }
    key.push_back(-2);
    key.push_back(static_cast<int64_t>(description->structure.size()));
    key.insert(key.end(), description->structure.begin(), description->structure.end());
    for (const auto& ref : description->storages) {
      key.push_back(number(ref.id()) * 4 + (ref.written ? 2 : 0) +
                    (ref.written && ref.storage.expired() ? 1 : 0));
    }
    if (description->fusible) {
      for (const auto& tensor : description->fusible->tensors()) {
        key.push_back(number(tensor.storage));
        key.push_back(tensor.offset_bytes);
      }
    }
    for (const auto& lane : description->lanes) {
      for (const auto& tensor : lane->tensors()) {
        key.push_back(number(tensor.storage));
        key.push_back(tensor.offset_bytes);
      }
    }
  }
  return key;
}

// The program cache: plans by structural key, shared by every stream and chip.
class ProgramCache {
 public:
  std::shared_ptr<const ProgramPlan> find(const Key& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = plans_.find(key);
    return found == plans_.end() ? nullptr : found->second;
  }
  void store(Key key, std::shared_ptr<const ProgramPlan> plan) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (plans_.size() >= kMaxPlans) plans_.clear();  // re-derivable: a full cache starts over
    plans_.emplace(std::move(key), std::move(plan));
  }

 private:
  static constexpr size_t kMaxPlans = 4096;
  std::mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<const ProgramPlan>, KeyHash> plans_;
};

ProgramCache& program_cache() {
  static ProgramCache cache;
  return cache;
}

// TORCH_TPU_DUMP_PROGRAMS=DIR: each newly planned program as text, with its flush reason.
void dump_program(const ProgramPlan& program, const char* reason, size_t nodes) {
  static const char* directory = std::getenv("TORCH_TPU_DUMP_PROGRAMS");
  if (directory == nullptr || *directory == '\0') return;
  static std::atomic<int64_t> counter{0};
  const int64_t number = counter.fetch_add(1);
  std::ofstream out(std::string(directory) + "/program_" + std::to_string(number) + ".txt");
  out << "program " << number << ": " << nodes << " ops, flushed by " << reason << "\n"
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

std::shared_ptr<const OpDescription> describe_storages(
    const char* op_name, std::initializer_list<std::pair<const at::Tensor*, bool>> tensors) {
  if (!current_policy().defers_ops()) return nullptr;
  auto description = std::make_shared<OpDescription>();
  description->structure.push_back(static_cast<int64_t>(std::hash<std::string>()(op_name)));
  for (const auto& [tensor, written] : tensors) {
    if (!tensor->defined() || tensor->device().type() != c10::DeviceType::PrivateUse1) continue;
    description->structure.push_back(static_cast<int64_t>(tensor->numel()));
    description->storages.push_back(executors::host::StorageRef{
        c10::weak_intrusive_ptr<c10::StorageImpl>(tensor->storage().getWeakStorageImpl()), written});
  }
  return description;
}

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
  Key key = structural_key(pending);
  std::shared_ptr<const ProgramPlan> program = program_cache().find(key);
  const bool hit = program != nullptr;
  if (!hit) {
    program = std::make_shared<const ProgramPlan>(plan(pending));
    dump_program(*program, reason, pending.size());
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
