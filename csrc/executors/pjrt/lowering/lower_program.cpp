#include "executors/pjrt/lowering/lower_program.h"

#include <optional>
#include <stdexcept>

#include "executors/pjrt/lowering/op_lowering.h"
#include "executors/pjrt/lowering/storage_bytes.h"
#include "ir/printer.h"

namespace torch_tpu::executors::pjrt::lowering {
namespace {

ir::DType scalar_dtype(ir::ScalarValue::Kind kind) {
  switch (kind) {
    case ir::ScalarValue::Kind::kBool: return ir::DType::kBool;
    case ir::ScalarValue::Kind::kInt: return ir::DType::kInt64;
    case ir::ScalarValue::Kind::kDouble: return ir::DType::kFloat64;
    case ir::ScalarValue::Kind::kComplex: break;
  }
  throw NotSupported("not supported yet: complex Scalar arguments in a StableHLO lowering");
}

}  // namespace

// ---- OpContext ----

const ir::Argument& OpContext::arg(size_t index) const {
  if (index >= node_.args.size()) refuse("expected an argument " + std::to_string(index));
  return node_.args[index];
}

Tensor OpContext::tensor(size_t index) {
  const ir::Argument& argument = arg(index);
  if (argument.kind != ir::Argument::Kind::kTensor) {
    refuse("argument " + std::to_string(index) + " is not a tensor");
  }
  return read_(static_cast<ir::ValueId>(argument.integer));
}

std::vector<Tensor> OpContext::tensor_list(size_t index) {
  const ir::Argument& argument = arg(index);
  if (argument.kind != ir::Argument::Kind::kTensorList) {
    refuse("argument " + std::to_string(index) + " is not a tensor list");
  }
  std::vector<Tensor> tensors;
  for (const int64_t id : argument.list) {
    if (id == ir::kNoValue) refuse("an absent tensor in the list of argument " + std::to_string(index));
    tensors.push_back(read_(static_cast<ir::ValueId>(id)));
  }
  return tensors;
}

std::vector<std::optional<Tensor>> OpContext::optional_tensor_list(size_t index) {
  const ir::Argument& argument = arg(index);
  if (argument.kind != ir::Argument::Kind::kTensorList) {
    refuse("argument " + std::to_string(index) + " is not a tensor list");
  }
  std::vector<std::optional<Tensor>> tensors;
  for (const int64_t id : argument.list) {
    if (id == ir::kNoValue) {
      tensors.emplace_back();
    } else {
      tensors.emplace_back(read_(static_cast<ir::ValueId>(id)));
    }
  }
  return tensors;
}

ir::DType floating_compute(OpContext& context, ir::DType out) {
  if (out == ir::DType::kFloat16 || out == ir::DType::kBFloat16) return ir::DType::kFloat32;
  if (out != ir::DType::kFloat32 && out != ir::DType::kFloat64) context.refuse("a non-floating output");
  return out;
}

std::vector<int64_t> per_dimension(OpContext& context, size_t index, size_t spatial, const char* what,
                                   const std::vector<int64_t>& fallback) {
  std::vector<int64_t> values = context.arg(index).list;
  if (values.empty() && !fallback.empty()) return fallback;
  if (values.size() == 1) values.assign(spatial, values[0]);
  if (values.size() != spatial) context.refuse(std::string(what) + " of another length than the spatial rank");
  return values;
}

Tensor converted_operand(OpContext& context, size_t index, ir::DType compute,
                         const std::vector<int64_t>& shape) {
  FunctionBuilder& builder = context.builder();
  return builder.broadcast_to(builder.convert(context.tensor(index), compute), shape);
}

Tensor as_return(OpContext& context, size_t index, const Tensor& value) {
  const ir::TensorType& type = context.return_type(index);
  return context.builder().reshape(context.builder().convert(value, type.dtype), type.sizes);
}

const ir::TensorType& OpContext::tensor_type(size_t index) const {
  const ir::Argument& argument = arg(index);
  if (argument.kind != ir::Argument::Kind::kTensor) {
    refuse("argument " + std::to_string(index) + " is not a tensor");
  }
  return program_.values[static_cast<size_t>(argument.integer)].type;
}

ir::DType OpContext::tensor_dtype(size_t index) const { return tensor_type(index).dtype; }

ir::StorageId OpContext::value_storage(size_t index) const {
  tensor_type(index);  // refuses a non-tensor argument
  return program_.values[static_cast<size_t>(arg(index).integer)].storage;
}

Tensor OpContext::scalar(size_t index) const {
  size_t position = 0;
  for (size_t a = 0; a < index && a < node_.args.size(); ++a) {
    if (node_.args[a].kind == ir::Argument::Kind::kScalar) ++position;
  }
  if (arg(index).kind != ir::Argument::Kind::kScalar || position >= scalar_operands_.size()) {
    refuse("argument " + std::to_string(index) + " is not a Scalar");
  }
  return scalar_operands_[position];
}

const ir::TensorType& OpContext::return_type(size_t index) const {
  size_t seen = 0;
  for (const ir::Argument& ret : node_.returns) {
    if (ret.kind != ir::Argument::Kind::kTensor) continue;
    if (seen++ == index) return program_.values[static_cast<size_t>(ret.integer)].type;
  }
  refuse("expected a tensor return " + std::to_string(index));
}

bool OpContext::writes_an_argument() const {
  // In-place ("aten::add_.Tensor", "aten::neg_") and out= ("aten::add.out") schema names.
  const size_t dot = node_.op.find('.');
  const std::string overload = dot == std::string::npos ? "" : node_.op.substr(dot + 1);
  return in_place() || overload == "out" || overload.ends_with("_out");
}

bool OpContext::in_place() const {
  const std::string base = node_.op.substr(0, node_.op.find('.'));
  return !base.empty() && base.back() == '_';
}

bool OpContext::on_host(size_t index) const {
  return program_.storages[static_cast<size_t>(value_storage(index))].on_host;
}

void OpContext::refuse(const std::string& what) const {
  throw NotSupported("not supported yet: " + node_.op + ": " + what);
}

void OpContext::write_argument(size_t index, const Tensor& value) {
  const ir::TensorType& type = tensor_type(index);
  if (value.shape != type.sizes || value.dtype != type.dtype) {
    throw std::logic_error(node_.op + ": a write of " + value.type() + " into argument " + std::to_string(index));
  }
  argument_writes_.emplace_back(static_cast<ir::ValueId>(arg(index).integer), value);
}

void OpContext::check(const Tensor& violated, const std::string& message) {
  if (violated.dtype != ir::DType::kBool) throw std::logic_error(node_.op + ": a check that is not bool");
  Tensor anywhere = violated;
  if (!violated.shape.empty()) {
    std::vector<int64_t> every;
    for (size_t d = 0; d < violated.shape.size(); ++d) every.push_back(static_cast<int64_t>(d));
    anywhere = reduce(builder_, violated, every, {}, "stablehlo.or", builder_.zeros(ir::DType::kBool, {}));
  }
  checks_.push_back({anywhere, node_.op + ": " + message});
}

// ---- the program ----

namespace {

// One lowering of `program`, leaving out of the parameters the storages in `unread` (whose
// contents before the program it never uses: it overwrites them whole first). Also returns
// those of its storage parameters that it turned out not to use.
std::pair<LoweredProgram, std::vector<ir::StorageId>> lower_once(const ir::Program& program,
                                                                 const std::vector<bool>& unread) {
  LoweredProgram lowered;
  FunctionBuilder builder;
  const size_t storage_count = program.storages.size();
  std::vector<bool> accessed(storage_count, false);
  std::vector<bool> written(storage_count, false);
  for (const ir::Node& node : program.nodes) {
    for (const ir::StorageAccess& access : node.accesses) {
      accessed[static_cast<size_t>(access.storage)] = true;
      if (access.writes()) written[static_cast<size_t>(access.storage)] = true;
    }
    // A storage reached through an argument is a parameter even if the node's access list
    // misses it: reading zeros in its place would be silently wrong.
    for (const ir::Argument& arg : node.args) {
      std::vector<int64_t> ids;
      if (arg.kind == ir::Argument::Kind::kTensor) ids.push_back(arg.integer);
      if (arg.kind == ir::Argument::Kind::kTensorList) ids = arg.list;
      for (const int64_t id : ids) {
        if (id >= 0) accessed[static_cast<size_t>(program.values[static_cast<size_t>(id)].storage)] = true;
      }
    }
  }
  // Each storage's unit: the dtype all its values share, else bytes (storage_bytes.h).
  std::vector<std::vector<ir::DType>> value_dtypes(storage_count);
  for (const ir::Value& value : program.values) {
    value_dtypes[static_cast<size_t>(value.storage)].push_back(value.type.dtype);
  }
  for (size_t s = 0; s < storage_count; ++s) {
    lowered.storage_units.push_back(storage_unit(value_dtypes[s], program.storages[s].bytes));
  }
  const auto units_of = [&](size_t s) {
    return program.storages[s].bytes / ir::element_size(lowered.storage_units[s]);
  };
  // Each storage's current contents, as of the node being lowered.
  std::vector<std::optional<Tensor>> current(storage_count);
  for (size_t s = 0; s < storage_count; ++s) {
    const ir::Storage& storage = program.storages[s];
    // A host storage (a CPU tensor or wrapped number) is a parameter like a device one: its
    // bytes are uploaded when the program runs.
    // An empty storage (an empty tensor's, whose data pointer is null) has nothing to pass.
    if ((storage.external || storage.on_host) && accessed[s] && storage.bytes > 0 && !unread[s]) {
      current[s] = builder.parameter(lowered.storage_units[s], {units_of(s)});
      lowered.parameter_storages.push_back(static_cast<ir::StorageId>(s));
    }
  }
  // Scalars follow the storages, in ir::dynamic_scalars order (node, then argument).
  std::vector<std::vector<Tensor>> node_scalars(program.nodes.size());
  for (size_t n = 0; n < program.nodes.size(); ++n) {
    for (const ir::Argument& arg : program.nodes[n].args) {
      if (arg.kind == ir::Argument::Kind::kScalarList) {
        throw NotSupported("not supported yet: Scalar lists (" + program.nodes[n].op +
                                    ") in a StableHLO lowering");
      }
      if (arg.kind != ir::Argument::Kind::kScalar) continue;
      node_scalars[n].push_back(builder.parameter(scalar_dtype(arg.scalar.kind), {}));
      lowered.scalar_kinds.push_back(arg.scalar.kind);
    }
  }

  auto storage_bytes = [&](ir::StorageId s) -> const Tensor& {
    std::optional<Tensor>& bytes = current[static_cast<size_t>(s)];
    // A created storage before its first write: its bytes are unspecified; zeros will do.
    if (!bytes) bytes = builder.zeros(lowered.storage_units[static_cast<size_t>(s)], {units_of(static_cast<size_t>(s))});
    return *bytes;
  };
  auto read = [&](ir::ValueId id) {
    const ir::Value& value = program.values[static_cast<size_t>(id)];
    return read_value(builder, storage_bytes(value.storage), value.type);
  };

  std::vector<RunTimeCheck> checks;
  size_t writing_nodes = 0;
  for (size_t n = 0; n < program.nodes.size(); ++n) {
    const ir::Node& node = program.nodes[n];
    bool writes_bytes = false;
    for (const ir::StorageAccess& access : node.accesses) {
      writes_bytes |= access.writes() && program.storages[static_cast<size_t>(access.storage)].bytes > 0;
    }
    // A node that writes nothing (a view) or only empty storages (every output has no
    // elements) changes no bytes: its returns are layouts that later reads go through, and its
    // lowering need not handle inputs with no elements.
    if (!writes_bytes) continue;
    lowered.several_writing_nodes = writing_nodes++ > 0;
    const OpLowering lowering = find_lowering(node.op);
    if (lowering == nullptr) {
      throw NotSupported("not supported yet: no StableHLO lowering for " + node.op);
    }
    OpContext context(builder, program, node, node_scalars[n], read, checks);
    const std::vector<Tensor> results = lowering(context);
    size_t r = 0;
    std::vector<bool> covered(storage_count, false);
    for (const ir::Argument& ret : node.returns) {
      if (ret.kind == ir::Argument::Kind::kTensorList) context.refuse("tensor list returns");
      if (ret.kind != ir::Argument::Kind::kTensor) continue;
      if (r >= results.size()) context.refuse("its lowering returned too few tensors");
      const ir::Value& value = program.values[static_cast<size_t>(ret.integer)];
      const Tensor& result = results[r++];
      bool node_writes_it = false;
      for (const ir::StorageAccess& access : node.accesses) {
        node_writes_it |= access.storage == value.storage && access.writes();
      }
      if (!node_writes_it) continue;
      if (result.shape != value.type.sizes || result.dtype != value.type.dtype) {
        throw std::logic_error("StableHLO lowering of " + node.op + " returned " + result.type() +
                               " for " + ir::to_text(value.type));
      }
      std::optional<Tensor>& bytes = current[static_cast<size_t>(value.storage)];
      bytes = write_value(builder, bytes, program.storages[static_cast<size_t>(value.storage)].bytes,
                          lowered.storage_units[static_cast<size_t>(value.storage)], value.type, result);
      covered[static_cast<size_t>(value.storage)] = true;
    }
    for (const auto& [id, result] : context.argument_writes()) {
      const ir::Value& value = program.values[static_cast<size_t>(id)];
      bool marked = false;
      for (const ir::StorageAccess& access : node.accesses) {
        marked |= access.storage == value.storage && access.writes();
      }
      // An unmarked write would be dropped (the storage is no result): the host kernel runs.
      if (!marked) context.refuse("it updates s" + std::to_string(value.storage) + ", which the node does not write");
      std::optional<Tensor>& bytes = current[static_cast<size_t>(value.storage)];
      bytes = write_value(builder, bytes, program.storages[static_cast<size_t>(value.storage)].bytes,
                          lowered.storage_units[static_cast<size_t>(value.storage)], value.type, result);
      covered[static_cast<size_t>(value.storage)] = true;
    }
    for (const ir::StorageAccess& access : node.accesses) {
      if (access.writes() && !covered[static_cast<size_t>(access.storage)]) {
        context.refuse("it writes s" + std::to_string(access.storage) + " through no return");
      }
    }
  }

  std::vector<Tensor> results;
  for (size_t s = 0; s < storage_count; ++s) {
    if (!written[s] || !program.storages[s].live_out || program.storages[s].bytes == 0) continue;
    results.push_back(*current[s]);
    lowered.result_storages.push_back(static_cast<ir::StorageId>(s));
  }
  for (const RunTimeCheck& check : checks) {
    results.push_back(check.violated);
    lowered.check_messages.push_back(check.message);
  }
  if (checks.empty()) {
    for (size_t p = 0; p < lowered.parameter_storages.size(); ++p) {
      for (size_t r = 0; r < lowered.result_storages.size(); ++r) {
        if (lowered.parameter_storages[p] == lowered.result_storages[r]) lowered.donatable.emplace_back(p, r);
      }
    }
  }
  std::vector<ir::StorageId> unused;
  const std::vector<bool> used = builder.parameters_used(results);
  for (size_t p = 0; p < lowered.parameter_storages.size(); ++p) {
    if (!used[p]) unused.push_back(lowered.parameter_storages[p]);
  }
  lowered.mlir = builder.finish_module(results, lowered.donatable);
  return {std::move(lowered), std::move(unused)};
}

}  // namespace

// A storage the program overwrites whole before reading (fill_, zero_, a copy_ or out= into a
// fresh tensor) is no parameter: a run then neither uploads zeros for a buffer never written
// nor keeps the old buffer alive beside the new one. Lowering is deterministic and cheap beside
// a compile, so such storages are found by lowering once and lowered again without them.
LoweredProgram lower_program(const ir::Program& program) {
  std::vector<bool> unread(program.storages.size(), false);
  auto [lowered, unused] = lower_once(program, unread);
  if (unused.empty()) return lowered;
  for (const ir::StorageId s : unused) unread[static_cast<size_t>(s)] = true;
  return lower_once(program, unread).first;
}

}  // namespace torch_tpu::executors::pjrt::lowering
