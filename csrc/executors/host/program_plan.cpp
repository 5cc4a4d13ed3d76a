#include "executors/host/program_plan.h"

#include "executors/host/host_op_work.h"

#include <sstream>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace torch_tpu::executors::host {
namespace {

using engine::description_of;
using engine::OpDescription;

// A cluster's earlier ops may move past at most this many opaque ops between two of its ops:
// enough for the matmul between silu(x @ w1) and its product with x @ w3, and short enough
// that deferring those ops barely delays the buffers they would free.
constexpr size_t kMostOpsPassed = 4;

const engine::StorageRef* find_ref(const OpDescription& description,
                                            const c10::StorageImpl* storage) {
  for (const auto& ref : description.storages) {
    if (ref.id() == storage) return &ref;
  }
  return nullptr;
}

// An undescribed task that may read chip memory (see launch_described's contract): all but
// the runtime's own event tasks.
bool may_read_anything(const engine::PendingOp& task) {
  return description_of(task) == nullptr && std::string_view(task.op_name).rfind("tpu::event", 0) != 0;
}

// Whether any op from `from` on touches `storage` (or may).
bool touched_from(const std::vector<engine::PendingOp>& pending, size_t from,
                  const c10::StorageImpl* storage) {
  for (size_t i = from; i < pending.size(); ++i) {
    const OpDescription* description = description_of(pending[i]);
    if (description != nullptr ? find_ref(*description, storage) != nullptr
                               : may_read_anything(pending[i])) {
      return true;
    }
  }
  return false;
}

// Dead: no tensor refers to it any more (its writer's weak reference expired).
bool dead(const OpDescription& writer, const c10::StorageImpl* storage) {
  const engine::StorageRef* ref = find_ref(writer, storage);
  return ref != nullptr && ref->storage.expired();
}

// Whether opaque op `op` may run before the cluster ops `members` (all issued before it): it
// writes nothing they touch and reads nothing they write.
bool may_pass(const OpDescription& op, const std::vector<uint32_t>& members,
              const std::vector<engine::PendingOp>& pending) {
  for (const auto& ref : op.storages) {
    for (const uint32_t member : members) {
      const auto* member_ref = find_ref(*description_of(pending[member]), ref.id());
      if (member_ref != nullptr && (ref.written || member_ref->written)) return false;
    }
  }
  return true;
}

std::string shape_text(c10::IntArrayRef shape) {
  std::ostringstream text;
  text << "[";
  for (size_t i = 0; i < shape.size(); ++i) text << (i ? ", " : "") << shape[i];
  text << "]";
  return text.str();
}

// An op as the dump names it: where it was issued too, when recorded (engine/issue_sites.h).
// A cached plan shows the places of the ops it was first planned from.
std::string op_text(const engine::PendingOp& task) {
  return task.op_name + runtime::issued_at_note(task.issued_at);
}

class Planner {
 public:
  explicit Planner(const std::vector<engine::PendingOp>& pending)
      : pending_(pending), done_(pending.size(), false) {}

  ProgramPlan run() {
    size_t i = 0;
    while (i < pending_.size()) i = plan_from(i);
    program_.dump = dump_.str();
    return std::move(program_);
  }

 private:
  // Plans the step(s) starting at pending task `i`; returns the first task not yet planned.
  size_t plan_from(size_t i) {
    const OpDescription* first = description_of(pending_[i]);
    if (first != nullptr && !host_work_of(*first).lanes.empty()) {
      if (const size_t end = plan_lanes(i); end > i) return end;
    }
    ClusterBuilder builder;
    if (first == nullptr || !host_work_of(*first).fusible ||
        !builder.try_add(*host_work_of(*first).fusible)) {
      dump_ << "step " << program_.steps.size() << ": " << op_text(pending_[i]) << "\n";
      emit(Step{Step::Kind::kSingle, {static_cast<uint32_t>(i)}});
      return i + 1;
    }
    // Grow the cluster. Opaque ops it may pass are held as candidates, and pass only if a
    // later op joins.
    std::vector<uint32_t> members{static_cast<uint32_t>(i)};
    std::vector<uint32_t> passed;
    std::vector<uint32_t> candidates;
    for (size_t j = i + 1; j < pending_.size(); ++j) {
      const OpDescription* next = description_of(pending_[j]);
      if (next == nullptr) break;
      if (const auto& fusible = host_work_of(*next).fusible) {
        if (!builder.try_add(*fusible)) break;
        passed.insert(passed.end(), candidates.begin(), candidates.end());
        candidates.clear();
        members.push_back(static_cast<uint32_t>(j));
        continue;
      }
      if (candidates.size() == kMostOpsPassed || !may_pass(*next, members, pending_)) break;
      candidates.push_back(static_cast<uint32_t>(j));
    }
    for (const uint32_t op : passed) {
      dump_ << "step " << program_.steps.size() << ": " << op_text(pending_[op]) << "\n";
      emit(Step{Step::Kind::kSingle, {op}});
    }
    emit_cluster(builder, std::move(members), passed.size());
    return static_cast<size_t>(program_.steps.back().tasks.back()) + 1;
  }

  // A run of multi-tensor ops from `i` with as many lanes each, fused lane by lane: lane l's
  // cluster runs every op's lane l. Lanes must not share a storage any of them writes, so
  // running them one after another computes what running the ops one after another does.
  // Returns the end of the run, or `i` if fewer than two ops would fuse.
  size_t plan_lanes(size_t i) {
    const size_t count = host_work_of(*description_of(pending_[i])).lanes.size();
    std::vector<ClusterBuilder> builders(count);
    std::unordered_map<const c10::StorageImpl*, std::pair<size_t, bool>> lane_of;  // (lane, written)
    const auto join = [&](const OpDescription& op, std::vector<ClusterBuilder>& into,
                          std::unordered_map<const c10::StorageImpl*, std::pair<size_t, bool>>& owners) {
      const auto& lanes = host_work_of(op).lanes;
      if (lanes.size() != count) return false;
      for (size_t lane = 0; lane < count; ++lane) {
        if (!into[lane].try_add(*lanes[lane])) return false;
        for (const auto& tensor : lanes[lane]->tensors()) {
          auto [found, added] = owners.emplace(tensor.storage, std::make_pair(lane, tensor.written));
          if (added) continue;
          if (found->second.first != lane && (found->second.second || tensor.written)) return false;
          found->second.second = found->second.second || tensor.written;
        }
      }
      return true;
    };
    if (!join(*description_of(pending_[i]), builders, lane_of)) return i;
    size_t end = i + 1;
    for (; end < pending_.size(); ++end) {
      const OpDescription* next = description_of(pending_[end]);
      if (next == nullptr) break;
      auto trial = builders;
      auto trial_owners = lane_of;
      if (!join(*next, trial, trial_owners)) break;
      builders = std::move(trial);
      lane_of = std::move(trial_owners);
    }
    if (end - i < 2) return i;
    std::vector<uint32_t> tasks;
    for (size_t k = i; k < end; ++k) tasks.push_back(static_cast<uint32_t>(k));
    for (size_t lane = 0; lane < count; ++lane) {
      emit_cluster(builders[lane], tasks, 0, static_cast<int>(lane), /*completes=*/lane + 1 == count);
    }
    return end;
  }

  void emit_cluster(const ClusterBuilder& builder, std::vector<uint32_t> members, size_t passed,
                    int lane = -1, bool completes = true) {
    const size_t after = members.back() + 1;
    // A storage stays in scratch if the cluster writes it, no tensor refers to it any more and
    // no later op touches it. (Passed ops, which run first, never touch what earlier members
    // write: may_pass. A lane's cluster is only asked about storages that lane writes, which no
    // other lane touches: plan_lanes.)
    const auto internal = [&](const c10::StorageImpl* storage) {
      for (const uint32_t k : members) {
        const OpDescription& writer = *description_of(pending_[k]);
        const auto* ref = find_ref(writer, storage);
        if (ref != nullptr && ref->written) return dead(writer, storage) && !touched_from(pending_, after, storage);
      }
      return false;
    };
    auto cluster = std::make_shared<ClusterPlan>(builder.finish(internal));
    Step step{cluster->bytes_written == 0
                  ? Step::Kind::kSkip
                  : (members.size() >= 2 ? Step::Kind::kCluster : Step::Kind::kSingle),
              std::move(members), lane};
    dump_ << "step " << program_.steps.size() << ": ";
    if (step.kind == Step::Kind::kSkip) dump_ << "skipped (no one reads the results): ";
    if (step.kind != Step::Kind::kSingle) program_.bytes_avoided += cluster->bytes_avoided;
    if (step.kind == Step::Kind::kCluster) {
      program_.bytes_written += cluster->bytes_written;
      dump_ << "fused kernel over " << shape_text(cluster->shape) << " ("
            << cluster->scratch_dtypes.size() << " intermediates in scratch"
            << (lane >= 0 ? ", lane " + std::to_string(lane) : std::string()) << "): ";
      ++program_.fused_kernels;
    }
    if (step.kind != Step::Kind::kSingle) step.cluster = std::move(cluster);
    for (size_t k = 0; k < step.tasks.size(); ++k) {
      dump_ << (k ? ", " : "") << op_text(pending_[step.tasks[k]]);
    }
    if (passed > 0) dump_ << " (after the " << passed << " op(s) above it moved ahead)";
    dump_ << "\n";
    emit(std::move(step), completes);
  }

  // Appends `step`; the host's releases of every task whose predecessors have all run by then
  // run after it (a passed op's releases wait for the cluster ops issued before it).
  // A lane's cluster completes its tasks only with the last lane (`completes`).
  void emit(Step step, bool completes = true) {
    if (completes) {
      for (const uint32_t task : step.tasks) done_[task] = true;
    }
    step.release_begin = released_;
    while (released_ < pending_.size() && done_[released_]) ++released_;
    step.release_end = released_;
    program_.steps.push_back(std::move(step));
  }

  const std::vector<engine::PendingOp>& pending_;
  std::vector<bool> done_;
  uint32_t released_ = 0;
  ProgramPlan program_;
  std::ostringstream dump_;
};

}  // namespace

ProgramPlan plan(const std::vector<engine::PendingOp>& pending) {
  return Planner(pending).run();
}

}  // namespace torch_tpu::executors::host
