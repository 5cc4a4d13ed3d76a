#include "engine/program_assembly.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>

#include "engine/program.h"

namespace torch_tpu::engine {
namespace {

// Hashes a layout over a storage, to find the value that already names it.
size_t layout_hash(ir::StorageId storage, const ir::TensorType& type) {
  size_t hash = static_cast<size_t>(storage) * 0x9E3779B97F4A7C15ull;
  const auto mix = [&](int64_t word) { hash = (hash ^ static_cast<size_t>(word)) * 0x100000001b3ull; };
  mix(static_cast<int64_t>(type.dtype));
  mix(type.storage_offset);
  for (const int64_t size : type.sizes) mix(size);
  for (const int64_t stride : type.strides) mix(stride);
  return hash;
}

// Open-addressing tables: a flush assembles hundreds of nodes on the recording thread, and
// node-based maps allocated for every storage and value.
class StorageIds {
 public:
  void reset(size_t most) {
    size_t size = 64;
    while (size < 2 * most) size *= 2;
    slots_.assign(size, Slot{});
  }
  // The id stored for `identity`, or -1; `insert` stores `id` if absent.
  ir::StorageId find(const void* identity, ir::StorageId insert = -1) {
    const size_t mask = slots_.size() - 1;
    size_t i = ((reinterpret_cast<uintptr_t>(identity) >> 4) * 0x9E3779B97F4A7C15ull >> 7) & mask;
    while (slots_[i].identity != nullptr && slots_[i].identity != identity) i = (i + 1) & mask;
    if (slots_[i].identity == nullptr && insert >= 0) slots_[i] = Slot{identity, insert};
    return slots_[i].identity == identity ? slots_[i].id : -1;
  }

 private:
  struct Slot {
    const void* identity = nullptr;
    ir::StorageId id = -1;
  };
  std::vector<Slot> slots_;
};

class Assembler {
 public:
  Assembler(const std::vector<engine::PendingOp>& pending, bool with_issue_sites,
            std::vector<runtime::DeviceAddress>* buffers)
      : with_issue_sites_(with_issue_sites), buffers_(buffers) {
    size_t tensors = 0;
    for (const engine::PendingOp& task : pending) {
      if (const OpDescription* description = description_of(task)) tensors += description->node_tensors.size();
    }
    storage_ids_.reset(tensors);
    buckets_.assign(std::max<size_t>(64, std::bit_ceil(2 * tensors + 1)), -1);
    program_.nodes.reserve(pending.size());
    program_.values.reserve(tensors);
    program_.storages.reserve(tensors);
  }

  void add(const engine::PendingOp& task) {
    const OpDescription* description = description_of(task);
    if (description == nullptr) {
      ir::Node node;
      node.op = task.op_name;
      finish_node(std::move(node), task);
      return;
    }
    const std::vector<NodeTensor>& tensors = description->node_tensors;
    std::vector<ir::StorageId> storages(tensors.size());
    for (size_t slot = 0; slot < tensors.size(); ++slot) storages[slot] = storage_of(tensors[slot]);
    note_liveness(*description);
    ir::Node node = description->node;
    for (ir::Argument& arg : node.args) {
      if (arg.kind == ir::Argument::Kind::kTensor) {
        arg.integer = value_of(tensors, storages, static_cast<size_t>(arg.integer));
      } else if (arg.kind == ir::Argument::Kind::kTensorList) {
        for (int64_t& slot : arg.list) {
          if (slot != ir::kNoValue) slot = value_of(tensors, storages, static_cast<size_t>(slot));
        }
      }
    }
    node.accesses = accesses(tensors, storages);
    std::vector<ir::Argument> returns = std::move(node.returns);
    node.returns.clear();
    finish_node(std::move(node), task);
    for (ir::Argument& ret : returns) {
      if (ret.kind == ir::Argument::Kind::kTensor) {
        ret.integer = define(tensors, storages, static_cast<size_t>(ret.integer));
      } else if (ret.kind == ir::Argument::Kind::kTensorList) {
        for (int64_t& slot : ret.list) slot = define(tensors, storages, static_cast<size_t>(slot));
      }
    }
    program_.nodes.back().returns = std::move(returns);
  }

  ir::Program finish() {
    for (size_t s = 0; s < program_.storages.size(); ++s) {
      program_.storages[s].live_out = program_.storages[s].on_host || live_[s];
    }
    return std::move(program_);
  }

 private:
  void finish_node(ir::Node node, const engine::PendingOp& task) {
    if (with_issue_sites_ && task.issued_at != nullptr) node.issued_at = task.issued_at;
    program_.add_node(std::move(node));
  }

  // A storage is live while any weak reference to it has not expired.
  void note_liveness(const OpDescription& description) {
    for (const auto& ref : description.storages) {
      const ir::StorageId storage = storage_ids_.find(ref.id());
      if (storage >= 0 && !live_[static_cast<size_t>(storage)]) {
        live_[static_cast<size_t>(storage)] = !ref.storage.expired();
      }
    }
  }

  ir::StorageId storage_of(const NodeTensor& tensor) {
    const auto next = static_cast<ir::StorageId>(program_.storages.size());
    const ir::StorageId id = storage_ids_.find(tensor.storage, next);
    if (id == next) {
      program_.add_storage(tensor.storage_bytes, /*external=*/!tensor.fresh, /*live_out=*/false,
                           tensor.on_host);
      live_.push_back(false);
      if (buffers_ != nullptr) buffers_->push_back(tensor.buffer);
    } else {
      // An op of the program may have grown the storage (resize_, an out= argument).
      int64_t& bytes = program_.storages[static_cast<size_t>(id)].bytes;
      bytes = std::max(bytes, tensor.storage_bytes);
    }
    return id;
  }

  // The value naming this layout of the slot's storage: the latest defined, else a new input.
  ir::ValueId value_of(const std::vector<NodeTensor>& tensors,
                       const std::vector<ir::StorageId>& storages, size_t slot) {
    const ir::TensorType& type = tensors[slot].type;
    const size_t bucket = layout_hash(storages[slot], type) & (buckets_.size() - 1);
    for (ir::ValueId value = buckets_[bucket]; value >= 0; value = next_in_bucket_[static_cast<size_t>(value)]) {
      if (current_[static_cast<size_t>(value)] && names(value, storages[slot], type)) return value;
    }
    return add_to_bucket(program_.add_input(type, storages[slot]), bucket);
  }

  // A value the last node returns; later reads of its layout name it.
  ir::ValueId define(const std::vector<NodeTensor>& tensors,
                     const std::vector<ir::StorageId>& storages, size_t slot) {
    const ir::TensorType& type = tensors[slot].type;
    const size_t bucket = layout_hash(storages[slot], type) & (buckets_.size() - 1);
    for (ir::ValueId value = buckets_[bucket]; value >= 0; value = next_in_bucket_[static_cast<size_t>(value)]) {
      if (names(value, storages[slot], type)) current_[static_cast<size_t>(value)] = false;
    }
    return add_to_bucket(
        program_.add_return(type, storages[slot], /*append_to_returns=*/false), bucket);
  }

  ir::ValueId add_to_bucket(ir::ValueId value, size_t bucket) {
    next_in_bucket_.push_back(buckets_[bucket]);
    current_.push_back(true);
    buckets_[bucket] = value;
    return value;
  }

  bool names(ir::ValueId value, ir::StorageId storage, const ir::TensorType& type) const {
    const ir::Value& named = program_.values[static_cast<size_t>(value)];
    return named.storage == storage && named.type == type;
  }

  static std::vector<ir::StorageAccess> accesses(const std::vector<NodeTensor>& tensors,
                                                 const std::vector<ir::StorageId>& storages) {
    std::vector<ir::StorageAccess> result;
    for (size_t slot = 0; slot < tensors.size(); ++slot) {
      const NodeTensor& tensor = tensors[slot];
      const int flags = (tensor.read && !tensor.fresh ? 1 : 0) |
                        (tensor.written || tensor.fresh ? 2 : 0);
      if (flags == 0) continue;  // a return naming a storage its arguments already listed
      bool merged = false;
      for (ir::StorageAccess& access : result) {
        if (access.storage != storages[slot]) continue;
        access.access = static_cast<ir::Access>(static_cast<int>(access.access) | flags);
        merged = true;
      }
      if (!merged) result.push_back({storages[slot], static_cast<ir::Access>(flags)});
    }
    return result;
  }

  const bool with_issue_sites_;
  std::vector<runtime::DeviceAddress>* buffers_;
  ir::Program program_;
  StorageIds storage_ids_;
  std::vector<bool> live_;  // per storage id: a tensor still refers to it
  // Values by layout: chains through next_in_bucket_, newest first. A value a later node's
  // return replaced (same storage and layout) is no longer current.
  std::vector<ir::ValueId> buckets_;
  std::vector<ir::ValueId> next_in_bucket_;
  std::vector<bool> current_;
};

}  // namespace

ir::Program assemble_program(const std::vector<engine::PendingOp>& pending,
                             bool with_issue_sites, std::vector<runtime::DeviceAddress>* buffers) {
  if (buffers != nullptr) buffers->clear();
  Assembler assembler(pending, with_issue_sites, buffers);
  for (const engine::PendingOp& task : pending) assembler.add(task);
  return assembler.finish();
}

}  // namespace torch_tpu::engine
