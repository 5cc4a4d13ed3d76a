#include "ir/verifier.h"

#include <set>
#include <sstream>

#include "ir/printer.h"

namespace torch_tpu::ir {
namespace {

class Verifier {
 public:
  explicit Verifier(const Program& program) : program_(program) {}

  std::vector<std::string> run() {
    defines_.assign(program_.nodes.size(), {});
    for (size_t v = 0; v < program_.values.size(); ++v) {
      check_value(static_cast<ValueId>(v));
      const int32_t node = program_.values[v].defined_by;
      if (node >= 0 && static_cast<size_t>(node) < defines_.size()) {
        defines_[static_cast<size_t>(node)].push_back(static_cast<ValueId>(v));
      }
    }
    std::vector<bool> written(program_.storages.size(), false);
    for (size_t n = 0; n < program_.nodes.size(); ++n) check_node(static_cast<int32_t>(n), written);
    return std::move(problems_);
  }

 private:
  bool storage_ok(StorageId storage) const {
    return storage >= 0 && static_cast<size_t>(storage) < program_.storages.size();
  }
  bool value_ok(int64_t value) const {
    return value >= 0 && static_cast<size_t>(value) < program_.values.size();
  }

  void check_value(ValueId id) {
    const Value& value = program_.values[static_cast<size_t>(id)];
    const std::string name = "value %" + std::to_string(id);
    const TensorType& type = value.type;
    if (type.sizes.size() != type.strides.size()) {
      problems_.push_back(name + ": " + std::to_string(type.sizes.size()) + " sizes but " +
                          std::to_string(type.strides.size()) + " strides");
      return;
    }
    for (size_t d = 0; d < type.sizes.size(); ++d) {
      if (type.sizes[d] < 0 || type.strides[d] < 0) {
        problems_.push_back(name + ": negative size or stride in " + to_text(type));
        return;
      }
    }
    if (type.storage_offset < 0) problems_.push_back(name + ": negative storage offset");
    if (!storage_ok(value.storage)) {
      problems_.push_back(name + ": no storage s" + std::to_string(value.storage));
      return;
    }
    const Storage& storage = program_.storages[static_cast<size_t>(value.storage)];
    if (element_size(type.dtype) > 0 && type.extent_bytes() > storage.bytes) {
      problems_.push_back(name + ": " + to_text(type) + " reaches byte " +
                          std::to_string(type.extent_bytes()) + " of s" +
                          std::to_string(value.storage) + ", which has " +
                          std::to_string(storage.bytes));
    }
    if (storage.on_host && !storage.external) {
      problems_.push_back(name + ": host storage s" + std::to_string(value.storage) + " is not external");
    }
    if (value.defined_by >= static_cast<int32_t>(program_.nodes.size())) {
      problems_.push_back(name + ": defined by node " + std::to_string(value.defined_by) +
                          ", which does not exist");
    }
  }

  // The value ids an argument names.
  static std::vector<int64_t> values_of(const Argument& arg) {
    if (arg.kind == Argument::Kind::kTensor) return {arg.integer};
    if (arg.kind == Argument::Kind::kTensorList) return arg.list;
    return {};
  }

  void check_node(int32_t index, std::vector<bool>& written) {
    const Node& node = program_.nodes[static_cast<size_t>(index)];
    const std::string name = "node " + std::to_string(index) + " (" + node.op + ")";
    if (node.op.empty()) problems_.push_back(name + ": no op name");
    std::set<StorageId> touched;  // by its arguments and returns
    for (const Argument& arg : node.args) {
      for (const int64_t id : values_of(arg)) {
        if (id == kNoValue && arg.kind == Argument::Kind::kTensorList) continue;
        if (!value_ok(id)) {
          problems_.push_back(name + ": argument %" + std::to_string(id) + " does not exist");
          continue;
        }
        const Value& value = program_.values[static_cast<size_t>(id)];
        if (value.defined_by >= index) {
          problems_.push_back(name + ": argument %" + std::to_string(id) + " is used before it is defined");
        }
        touched.insert(value.storage);
      }
    }
    std::set<ValueId> returned;
    for (const Argument& ret : node.returns) {
      if (ret.kind != Argument::Kind::kTensor && ret.kind != Argument::Kind::kTensorList &&
          ret.kind != Argument::Kind::kNone) {
        problems_.push_back(name + ": a return is not a tensor, tensor list or None");
      }
      for (const int64_t id : values_of(ret)) {
        if (!value_ok(id) || program_.values[static_cast<size_t>(id)].defined_by != index) {
          problems_.push_back(name + ": return %" + std::to_string(id) + " is not a value it defines");
          continue;
        }
        returned.insert(static_cast<ValueId>(id));
        touched.insert(program_.values[static_cast<size_t>(id)].storage);
      }
    }
    for (const ValueId v : defines_[static_cast<size_t>(index)]) {
      if (returned.count(v) == 0) {
        problems_.push_back(name + ": defines %" + std::to_string(v) + " but does not return it");
      }
    }
    std::set<StorageId> listed;
    for (const StorageAccess& access : node.accesses) {
      const std::string storage = "s" + std::to_string(access.storage);
      if (!storage_ok(access.storage)) {
        problems_.push_back(name + ": accesses " + storage + ", which does not exist");
        continue;
      }
      if (!listed.insert(access.storage).second) {
        problems_.push_back(name + ": lists " + storage + " twice");
      }
      if (touched.count(access.storage) == 0) {
        problems_.push_back(name + ": accesses " + storage + " through none of its arguments or returns");
      }
      const Storage& info = program_.storages[static_cast<size_t>(access.storage)];
      if (access.writes() && info.on_host) {
        problems_.push_back(name + ": writes host storage " + storage);
      }
      if (access.reads() && !info.external && !written[static_cast<size_t>(access.storage)]) {
        problems_.push_back(name + ": reads created storage " + storage + " before anything writes it");
      }
    }
    for (const StorageAccess& access : node.accesses) {
      if (storage_ok(access.storage) && access.writes()) written[static_cast<size_t>(access.storage)] = true;
    }
    // A return in a storage none of its arguments reach is fresh: the node must write it.
    std::set<StorageId> argument_storages;
    for (const Argument& arg : node.args) {
      for (const int64_t id : values_of(arg)) {
        if (value_ok(id)) argument_storages.insert(program_.values[static_cast<size_t>(id)].storage);
      }
    }
    for (const ValueId id : returned) {
      const StorageId storage = program_.values[static_cast<size_t>(id)].storage;
      if (argument_storages.count(storage) != 0) continue;
      bool declared = false;
      for (const StorageAccess& access : node.accesses) declared |= access.storage == storage && access.writes();
      if (!declared) {
        problems_.push_back(name + ": returns %" + std::to_string(id) + " in s" +
                            std::to_string(storage) + " without declaring a write to it");
      }
    }
  }

  const Program& program_;
  std::vector<std::vector<ValueId>> defines_;  // per node: the values it defines
  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> verify(const Program& program) { return Verifier(program).run(); }

void verify_or_throw(const Program& program) {
  const std::vector<std::string> problems = verify(program);
  if (problems.empty()) return;
  std::ostringstream message;
  message << "invalid tpu program (" << problems.size() << " problem" << (problems.size() == 1 ? "" : "s")
          << "):";
  for (const std::string& problem : problems) message << "\n  " << problem;
  throw InvalidProgram(message.str());
}

}  // namespace torch_tpu::ir
