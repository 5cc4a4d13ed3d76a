// The program's text form: what TORCH_TPU_DUMP_PROGRAMS writes and what tests compare. One
// line per storage, input and node, e.g.
//   %2 = aten::add.Tensor(%0, %1, alpha=1) : f32[8, 4]{4, 1} s2  # reads s0 s1, writes s2
#pragma once

#include <string>

#include "ir/program.h"

namespace torch_tpu::ir {

std::string to_text(const Program& program);
std::string to_text(const TensorType& type);  // "f32[8, 4]{4, 1}" (+N for a storage offset)
std::string to_text(const Argument& arg);     // "%3", "[%1, None]", "2.5", "[1, 2]", ...

}  // namespace torch_tpu::ir
