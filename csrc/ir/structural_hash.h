// A program's structure: everything an executable compiled from it depends on (ops, constant
// arguments, the kinds of Scalar arguments, value layouts, storage sizes and roles, accesses),
// and nothing it does not (Scalar values, buffer addresses, where ops were issued). Two programs
// with equal keys can run one executable; the engine's program cache is keyed by it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/program.h"

namespace torch_tpu::ir {

struct StructuralKey {
  std::vector<int64_t> words;  // the structure, serialized: equality is exact
  uint64_t hash = 0;           // of `words`

  bool operator==(const StructuralKey& other) const {
    return hash == other.hash && words == other.words;
  }
};

struct StructuralKeyHash {
  size_t operator()(const StructuralKey& key) const { return static_cast<size_t>(key.hash); }
};

StructuralKey structural_key(const Program& program);

}  // namespace torch_tpu::ir
