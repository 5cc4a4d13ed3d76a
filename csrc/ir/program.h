// The program IR (DESIGN §2): what every executor compiles and runs. A program is a list of
// nodes at the level of PyTorch's Core ATen op set. A node names its op by schema name
// ("aten::add.Tensor"), takes its arguments in schema order (tensor values by id, everything
// else as constants), and defines its tensor returns as new values with static dtypes, sizes
// and strides. Every value lives in a storage at an offset, so views and in-place writes are
// explicit: a view is a new value over its base's storage; an in-place or out= op writes a
// storage and returns a new value for its current contents, and the node lists the storages it
// reads and writes. An executor with immutable buffers (PJRT) can therefore functionalize a
// program without knowing any op's aliasing rules. Torch-free: ops/ builds programs from the
// dispatcher's calls, executors/ compile them, engine/ caches what they compiled.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace torch_tpu::ir {

using ValueId = int32_t;
using StorageId = int32_t;
constexpr ValueId kNoValue = -1;  // an absent element of an optional tensor list

// A value's layout in its storage, in elements.
struct TensorType {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;

  int64_t numel() const;
  // Bytes from the storage's start to one past the last element this layout reaches (0 for
  // a layout of no elements).
  int64_t extent_bytes() const;
  bool operator==(const TensorType&) const = default;
};

// A tensor the program reads or defines: a layout over a storage. Reading a value at a node
// reads its storage's contents as of that node (program order), so a write through one value
// is seen by every other value over the same bytes, as on CPU.
struct Value {
  TensorType type;
  StorageId storage = 0;
  // The node whose return this is, or -1: a layout no node defines: a program input (in an
  // external storage) or a view made without an op (in a created storage, read once written).
  int32_t defined_by = -1;
};

// A region of device memory the program touches.
struct Storage {
  int64_t bytes = 0;
  // Holds data before the program runs (bound to an existing buffer); otherwise the program
  // creates it, and its first access is a write.
  bool external = false;
  // Still referenced once the program has run: its final contents must be kept. A storage
  // that is neither external nor live out is scratch an executor may never materialize.
  bool live_out = false;
  // Host memory (a CPU index tensor, a wrapped Python number): external and only read; its
  // bytes are a run-time operand, like a Scalar's value.
  bool on_host = false;
};

// A Scalar argument's value (PyTorch's c10::Scalar). Its kind is part of a program's
// structure, its value is not: executors take it as a run-time operand, so an optimizer's
// changing learning rate does not make a new program.
struct ScalarValue {
  enum class Kind : uint8_t { kBool, kInt, kDouble, kComplex };
  Kind kind = Kind::kDouble;
  int64_t integer = 0;  // kBool, kInt
  double real = 0.0;    // kDouble, kComplex
  double imag = 0.0;    // kComplex
  bool operator==(const ScalarValue&) const = default;
};

// One argument or return of a node, as its schema types it.
struct Argument {
  enum class Kind : uint8_t {
    kNone,          // an absent optional
    kTensor,        // `integer` is the value id
    kTensorList,    // `list` holds value ids (kNoValue for an absent optional element)
    kBool,          // `integer`
    kInt,           // `integer`
    kDouble,        // `real`
    kComplex,       // `real`, `imag`
    kScalar,        // `scalar`: a run-time operand, only its kind is structure
    kScalarList,    // `scalars`: run-time operands, only their kinds are structure
    kIntList,       // `list`
    kBoolList,      // `list` (0/1)
    kDoubleList,    // `reals`
    kString,        // `text`
    kDType,         // `integer`: a DType number
    kLayout,        // `integer`: PyTorch's Layout number
    kMemoryFormat,  // `integer`: PyTorch's MemoryFormat number
    kDevice,        // `integer`: a chip index (-1 for the host)
    kGenerator,     // `integer`: index of a random generator the executor is given at run time
  };
  Kind kind = Kind::kNone;
  int64_t integer = 0;
  double real = 0.0;
  double imag = 0.0;
  ScalarValue scalar;
  std::vector<ScalarValue> scalars;
  std::vector<int64_t> list;
  std::vector<double> reals;
  std::string text;

  static Argument none() { return {}; }
  static Argument tensor(ValueId value);
  static Argument tensor_list(std::vector<int64_t> values);
  static Argument boolean(bool value);
  static Argument int_value(int64_t value);
  static Argument double_value(double value);
  static Argument complex_value(double real, double imag);
  static Argument scalar_value(ScalarValue value);
  static Argument int_list(std::vector<int64_t> values);
  static Argument bool_list(std::vector<int64_t> values);
  static Argument double_list(std::vector<double> values);
  static Argument string(std::string value);
  static Argument dtype(DType value);
  static Argument enum_value(Kind kind, int64_t value);  // kLayout, kMemoryFormat, kDevice, kGenerator
};

enum class Access : uint8_t { kRead = 1, kWrite = 2, kReadWrite = 3 };

struct StorageAccess {
  StorageId storage = 0;
  Access access = Access::kRead;
  bool reads() const { return (static_cast<int>(access) & 1) != 0; }
  bool writes() const { return (static_cast<int>(access) & 2) != 0; }
};

struct Node {
  std::string op;                      // schema name with overload: "aten::add.Tensor"
  std::vector<Argument> args;          // in schema order
  std::vector<Argument> returns;       // kTensor, kTensorList or kNone, in schema order
  std::vector<StorageAccess> accesses;  // each storage it reads or writes, once
  // Where the host issued the op ("train.py:12 in step"), if recorded; not structure.
  std::string issued_at;
};

// Nodes in program order, with the values and storages they name. Build with the add_*
// helpers; verify() checks what they cannot.
struct Program {
  std::vector<Storage> storages;
  std::vector<Value> values;
  std::vector<Node> nodes;

  StorageId add_storage(int64_t bytes, bool external, bool live_out = false, bool on_host = false);
  // A value no node defines: a tensor that exists before the program runs (in an external
  // storage) or a view of a created storage.
  ValueId add_input(TensorType type, StorageId storage);
  // Appends `node` (its returns filled in with add_return) and returns its index.
  int32_t add_node(Node node);
  // A new value returned by the last added node; also appended to its returns when
  // `append_to_returns` (a list return's elements are appended by the caller).
  ValueId add_return(TensorType type, StorageId storage, bool append_to_returns = true);
};

// The values of every kScalar and kScalarList argument, in node and argument order: what a run passes to an
// executable compiled from any program of the same structure.
std::vector<ScalarValue> dynamic_scalars(const Program& program);

}  // namespace torch_tpu::ir
