#include "ir/printer.h"

#include <sstream>

namespace torch_tpu::ir {
namespace {

template <typename T>
void list_text(std::ostringstream& out, const std::vector<T>& items) {
  out << "[";
  for (size_t i = 0; i < items.size(); ++i) out << (i ? ", " : "") << items[i];
  out << "]";
}

std::string scalar_text(const ScalarValue& scalar) {
  std::ostringstream out;
  switch (scalar.kind) {
    case ScalarValue::Kind::kBool: out << (scalar.integer ? "True" : "False"); break;
    case ScalarValue::Kind::kInt: out << scalar.integer; break;
    case ScalarValue::Kind::kDouble: out << scalar.real; break;
    case ScalarValue::Kind::kComplex: out << "(" << scalar.real << "+" << scalar.imag << "j)"; break;
  }
  return out.str();
}

std::string access_text(const Node& node) {
  std::ostringstream reads;
  std::ostringstream writes;
  for (const StorageAccess& access : node.accesses) {
    if (access.reads()) reads << " s" << access.storage;
    if (access.writes()) writes << " s" << access.storage;
  }
  std::string text;
  if (!reads.str().empty()) text += "reads" + reads.str();
  if (!writes.str().empty()) text += (text.empty() ? "" : ", ") + std::string("writes") + writes.str();
  return text;
}

}  // namespace

std::string to_text(const TensorType& type) {
  std::ostringstream out;
  out << dtype_name(type.dtype);
  list_text(out, type.sizes);
  out << "{";
  for (size_t i = 0; i < type.strides.size(); ++i) out << (i ? ", " : "") << type.strides[i];
  out << "}";
  if (type.storage_offset != 0) out << "+" << type.storage_offset;
  return out.str();
}

std::string to_text(const Argument& arg) {
  std::ostringstream out;
  using Kind = Argument::Kind;
  switch (arg.kind) {
    case Kind::kNone: out << "None"; break;
    case Kind::kTensor: out << "%" << arg.integer; break;
    case Kind::kTensorList:
      out << "[";
      for (size_t i = 0; i < arg.list.size(); ++i) {
        out << (i ? ", " : "");
        if (arg.list[i] == kNoValue) {
          out << "None";
        } else {
          out << "%" << arg.list[i];
        }
      }
      out << "]";
      break;
    case Kind::kBool: out << (arg.integer ? "True" : "False"); break;
    case Kind::kInt: out << arg.integer; break;
    case Kind::kDouble: out << arg.real; break;
    case Kind::kComplex: out << "(" << arg.real << "+" << arg.imag << "j)"; break;
    case Kind::kScalar: out << scalar_text(arg.scalar); break;
    case Kind::kScalarList:
      out << "[";
      for (size_t i = 0; i < arg.scalars.size(); ++i) out << (i ? ", " : "") << scalar_text(arg.scalars[i]);
      out << "]";
      break;
    case Kind::kIntList: list_text(out, arg.list); break;
    case Kind::kBoolList: list_text(out, arg.list); break;
    case Kind::kDoubleList: list_text(out, arg.reals); break;
    case Kind::kString: out << '"' << arg.text << '"'; break;
    case Kind::kDType: out << dtype_name(static_cast<DType>(arg.integer)); break;
    case Kind::kLayout: out << "layout(" << arg.integer << ")"; break;
    case Kind::kMemoryFormat: out << "memory_format(" << arg.integer << ")"; break;
    case Kind::kDevice: out << (arg.integer < 0 ? std::string("cpu") : "tpu:" + std::to_string(arg.integer)); break;
    case Kind::kGenerator: out << "generator(" << arg.integer << ")"; break;
  }
  return out.str();
}

std::string to_text(const Program& program) {
  std::ostringstream out;
  for (size_t s = 0; s < program.storages.size(); ++s) {
    const Storage& storage = program.storages[s];
    out << "s" << s << ": " << storage.bytes << " bytes"
        << (storage.external ? ", external" : ", created")
        << (storage.live_out ? ", live out" : "") << (storage.on_host ? ", on host" : "") << "\n";
  }
  for (size_t v = 0; v < program.values.size(); ++v) {
    const Value& value = program.values[v];
    if (value.defined_by >= 0) continue;
    const bool input = value.storage < 0 || static_cast<size_t>(value.storage) >= program.storages.size() ||
                       program.storages[static_cast<size_t>(value.storage)].external;
    out << "%" << v << " = " << (input ? "input" : "view") << " : " << to_text(value.type) << " s"
        << value.storage << "\n";
  }
  for (const Node& node : program.nodes) {
    std::ostringstream returns;
    std::ostringstream types;
    for (size_t r = 0; r < node.returns.size(); ++r) {
      const Argument& ret = node.returns[r];
      returns << (r ? ", " : "") << to_text(ret);
      std::vector<int64_t> ids;
      if (ret.kind == Argument::Kind::kTensor) ids.push_back(ret.integer);
      if (ret.kind == Argument::Kind::kTensorList) ids = ret.list;
      for (const int64_t id : ids) {
        if (id < 0 || id >= static_cast<int64_t>(program.values.size())) continue;
        const Value& value = program.values[static_cast<size_t>(id)];
        types << (types.str().empty() ? "" : ", ") << to_text(value.type) << " s" << value.storage;
      }
    }
    out << (node.returns.empty() ? "" : returns.str() + " = ") << node.op << "(";
    for (size_t a = 0; a < node.args.size(); ++a) out << (a ? ", " : "") << to_text(node.args[a]);
    out << ")";
    if (!types.str().empty()) out << " : " << types.str();
    const std::string accesses = access_text(node);
    if (!accesses.empty() || !node.issued_at.empty()) out << "  #";
    if (!accesses.empty()) out << " " << accesses;
    if (!node.issued_at.empty()) out << (accesses.empty() ? " " : "; ") << "issued at " << node.issued_at;
    out << "\n";
  }
  return out.str();
}

}  // namespace torch_tpu::ir
