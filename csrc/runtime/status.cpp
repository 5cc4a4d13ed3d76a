#include "runtime/status.h"

#include <cstdio>

namespace torch_tpu::runtime {
namespace {

// "1.50 GiB": the unit users read in CUDA's OOM messages, so both read the same way.
std::string format_bytes(size_t bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[64];
  if (unit == 0) {
    std::snprintf(text, sizeof(text), "%zu bytes", bytes);
  } else {
    std::snprintf(text, sizeof(text), "%.2f %s", value, kUnits[unit]);
  }
  return text;
}

std::string oom_message(int chip, size_t requested, size_t free, size_t capacity) {
  return "tpu:" + std::to_string(chip) + " out of memory: tried to allocate " +
         format_bytes(requested) + " (" + std::to_string(requested) + " bytes); " +
         format_bytes(free) + " free of " + format_bytes(capacity) + " capacity";
}

}  // namespace

OutOfMemoryError::OutOfMemoryError(int chip, size_t requested, size_t free, size_t capacity)
    : RuntimeError(oom_message(chip, requested, free, capacity)),
      requested_(requested),
      free_(free),
      capacity_(capacity) {}

AsyncOpError::AsyncOpError(const std::string& op_name, const std::string& message,
                           bool out_of_memory)
    : RuntimeError("error in asynchronously executed op '" + op_name + "': " + message),
      op_name_(op_name),
      out_of_memory_(out_of_memory) {}

}  // namespace torch_tpu::runtime
