#include "engine/program_assembly.h"

#include <algorithm>
#include <unordered_map>
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

class Assembler {
 public:
  explicit Assembler(bool with_issue_sites) : with_issue_sites_(with_issue_sites) {}

  void add(const runtime::PendingTask& task) {
    const OpDescription* description = description_of(task);
    if (description == nullptr) {
      ir::Node node;
      node.op = task.op_name;
      finish_node(std::move(node), task);
      return;
    }
    note_liveness(*description);
    const std::vector<NodeTensor>& tensors = description->node_tensors;
    std::vector<ir::StorageId> storages(tensors.size());
    for (size_t slot = 0; slot < tensors.size(); ++slot) storages[slot] = storage_of(tensors[slot]);
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
      const auto found = live_.find(identities_[s]);
      program_.storages[s].live_out = program_.storages[s].on_host || (found != live_.end() && found->second);
    }
    return std::move(program_);
  }

 private:
  void finish_node(ir::Node node, const runtime::PendingTask& task) {
    if (with_issue_sites_ && task.issued_at != nullptr) node.issued_at = task.issued_at;
    program_.add_node(std::move(node));
  }

  // A storage is live while any weak reference to it has not expired.
  void note_liveness(const OpDescription& description) {
    for (const auto& ref : description.storages) {
      bool& live = live_[ref.id()];
      live = live || !ref.storage.expired();
    }
  }

  ir::StorageId storage_of(const NodeTensor& tensor) {
    const auto [found, added] = storage_ids_.emplace(tensor.storage, 0);
    if (added) {
      found->second = program_.add_storage(tensor.storage_bytes, /*external=*/!tensor.fresh,
                                           /*live_out=*/false, tensor.on_host);
      identities_.push_back(tensor.storage);
    } else {
      // An op of the program may have grown the storage (resize_, an out= argument).
      int64_t& bytes = program_.storages[static_cast<size_t>(found->second)].bytes;
      bytes = std::max(bytes, tensor.storage_bytes);
    }
    return found->second;
  }

  // The value naming this layout of the slot's storage: the latest defined, else a new input.
  ir::ValueId value_of(const std::vector<NodeTensor>& tensors,
                       const std::vector<ir::StorageId>& storages, size_t slot) {
    const ir::TensorType& type = tensors[slot].type;
    std::vector<ir::ValueId>& bucket = values_[layout_hash(storages[slot], type)];
    for (const ir::ValueId value : bucket) {
      if (names(value, storages[slot], type)) return value;
    }
    const ir::ValueId value = program_.add_input(type, storages[slot]);
    bucket.push_back(value);
    return value;
  }

  // A value the last node returns; later reads of its layout name it.
  ir::ValueId define(const std::vector<NodeTensor>& tensors,
                     const std::vector<ir::StorageId>& storages, size_t slot) {
    const ir::TensorType& type = tensors[slot].type;
    std::vector<ir::ValueId>& bucket = values_[layout_hash(storages[slot], type)];
    std::erase_if(bucket, [&](ir::ValueId value) { return names(value, storages[slot], type); });
    const ir::ValueId value = program_.add_return(type, storages[slot], /*append_to_returns=*/false);
    bucket.push_back(value);
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
  ir::Program program_;
  std::unordered_map<const void*, ir::StorageId> storage_ids_;
  std::vector<const void*> identities_;  // per storage id
  std::unordered_map<const void*, bool> live_;
  std::unordered_map<size_t, std::vector<ir::ValueId>> values_;  // by layout_hash
};

}  // namespace

ir::Program assemble_program(const std::vector<runtime::PendingTask>& pending,
                             bool with_issue_sites) {
  Assembler assembler(with_issue_sites);
  for (const runtime::PendingTask& task : pending) assembler.add(task);
  return assembler.finish();
}

}  // namespace torch_tpu::engine
