// A verified IR program as one StableHLO module (MLIR text, generic form), designed for
// immutable buffers (DESIGN §3): each storage is a 1-D array of its unit (storage_units). The module's
// parameters are the external storages the program accesses (storage order), then one 0-d
// parameter per ir::dynamic_scalars entry (i1 / i64 / f64 by Scalar kind), so one executable
// serves every Scalar value; its results are the final bytes of each live-out storage the
// program writes. Nodes that write no storage (views) emit nothing. Torch-free.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "executors/executor.h"
#include "ir/program.h"

namespace torch_tpu::executors::pjrt::lowering {

struct LoweredProgram {
  std::string mlir;
  // Module parameter i < parameter_storages.size() is that storage's contents.
  std::vector<ir::StorageId> parameter_storages;
  // The following parameters: the program's dynamic scalars, in order, of these kinds.
  std::vector<ir::ScalarValue::Kind> scalar_kinds;
  // Result i is the final contents of this storage.
  std::vector<ir::StorageId> result_storages;
  // The results after those: one 0-d bool per run-time check, true when the program's input
  // violated it; the run then fails with this message ("aten::gather: index 3 is out of ...").
  std::vector<std::string> check_messages;
  // More than one node writes storages (a fused program): a violated check must not lose the
  // other nodes' results, so they are kept and the run fails after them.
  bool several_writing_nodes = false;
  // Per program storage: the element type of its parameter and result, `tensor<N x unit>`
  // (bytes / element size elements): a dtype its values share, or kUInt8 (storage_bytes.h).
  std::vector<ir::DType> storage_units;
  // (parameter, result) pairs of one storage, its contents before and after: the module lets
  // a run donate that parameter's buffer to the result (an in-place update then needs no second
  // buffer on the device). Empty for a program with run-time checks: a failing one-op run must
  // leave its storages as they were.
  std::vector<std::pair<size_t, size_t>> donatable;
};

// Throws executors::NotSupported whose message starts with "not supported yet: " for what the
// lowering cannot express: "not supported yet: no StableHLO lowering for <op>" for an op
// without one (the engine falls back to host kernels), or naming the op and the reason.
LoweredProgram lower_program(const ir::Program& program);

}  // namespace torch_tpu::executors::pjrt::lowering
