#include "ir/structural_hash.h"

#include <bit>
#include <string_view>

namespace torch_tpu::ir {
namespace {

// FNV-1a over bytes: stable across processes and builds (unlike std::hash), so a key can also
// name an executable cached on disk (the words are hashed in the host's byte order).
uint64_t fnv1a(std::string_view bytes, uint64_t hash = 0xcbf29ce484222325ull) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

class KeyWriter {
 public:
  void word(int64_t value) { words_.push_back(value); }
  void text(const std::string& value) {
    word(static_cast<int64_t>(value.size()));
    word(static_cast<int64_t>(fnv1a(value)));
  }
  void ints(const std::vector<int64_t>& values) {
    word(static_cast<int64_t>(values.size()));
    words_.insert(words_.end(), values.begin(), values.end());
  }
  void real(double value) { word(std::bit_cast<int64_t>(value)); }

  void type(const TensorType& type) {
    word(static_cast<int64_t>(type.dtype));
    ints(type.sizes);
    ints(type.strides);
    word(type.storage_offset);
  }

  void argument(const Argument& arg) {
    using Kind = Argument::Kind;
    word(static_cast<int64_t>(arg.kind));
    switch (arg.kind) {
      case Kind::kNone: break;
      case Kind::kScalar: word(static_cast<int64_t>(arg.scalar.kind)); break;  // not the value
      case Kind::kScalarList:
        word(static_cast<int64_t>(arg.scalars.size()));
        for (const ScalarValue& scalar : arg.scalars) word(static_cast<int64_t>(scalar.kind));
        break;
      case Kind::kTensorList:
      case Kind::kIntList:
      case Kind::kBoolList: ints(arg.list); break;
      case Kind::kDoubleList:
        word(static_cast<int64_t>(arg.reals.size()));
        for (const double value : arg.reals) real(value);
        break;
      case Kind::kDouble: real(arg.real); break;
      case Kind::kComplex:
        real(arg.real);
        real(arg.imag);
        break;
      case Kind::kString: text(arg.text); break;
      case Kind::kTensor:
      case Kind::kBool:
      case Kind::kInt:
      case Kind::kDType:
      case Kind::kLayout:
      case Kind::kMemoryFormat:
      case Kind::kDevice:
      case Kind::kGenerator: word(arg.integer); break;
    }
  }

  StructuralKey finish() {
    StructuralKey key;
    key.words = std::move(words_);
    key.hash = fnv1a(std::string_view(reinterpret_cast<const char*>(key.words.data()),
                                      key.words.size() * sizeof(int64_t)));
    return key;
  }

 private:
  std::vector<int64_t> words_;
};

}  // namespace

StructuralKey structural_key(const Program& program) {
  KeyWriter key;
  key.word(static_cast<int64_t>(program.storages.size()));
  for (const Storage& storage : program.storages) {
    key.word(storage.bytes);
    key.word((storage.external ? 1 : 0) | (storage.live_out ? 2 : 0) | (storage.on_host ? 4 : 0));
  }
  key.word(static_cast<int64_t>(program.values.size()));
  for (const Value& value : program.values) {
    key.type(value.type);
    key.word(value.storage);
    key.word(value.defined_by);
  }
  key.word(static_cast<int64_t>(program.nodes.size()));
  for (const Node& node : program.nodes) {
    key.text(node.op);
    key.word(static_cast<int64_t>(node.args.size()));
    for (const Argument& arg : node.args) key.argument(arg);
    key.word(static_cast<int64_t>(node.returns.size()));
    for (const Argument& ret : node.returns) key.argument(ret);
    key.word(static_cast<int64_t>(node.accesses.size()));
    for (const StorageAccess& access : node.accesses) {
      key.word(access.storage * 4 + static_cast<int64_t>(access.access));
    }
  }
  return key.finish();
}

}  // namespace torch_tpu::ir
