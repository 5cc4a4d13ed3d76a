// Checks the invariants executors rely on (a value is defined before it is used, layouts fit
// their storages, every write is declared, created storages are written before they are read).
// Run on each new program before it is compiled, not on cache hits.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "ir/program.h"

namespace torch_tpu::ir {

// Each problem found, naming the node (index and op) or value; empty for a valid program.
std::vector<std::string> verify(const Program& program);

class InvalidProgram : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Throws InvalidProgram listing every problem.
void verify_or_throw(const Program& program);

}  // namespace torch_tpu::ir
