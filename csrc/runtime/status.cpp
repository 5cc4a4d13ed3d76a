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

std::string issued_at_note(const char* issued_at) {
  return issued_at != nullptr && *issued_at != '\0' ? std::string(" (issued at ") + issued_at + ")"
                                                     : std::string();
}

AsyncOpError::AsyncOpError(const std::string& op_name, const std::string& message,
                           bool out_of_memory, const char* issued_at)
    : RuntimeError("error in asynchronously executed op '" + op_name + "'" +
                   issued_at_note(issued_at) + ": " + message),
      op_name_(op_name),
      issued_at_(issued_at != nullptr ? issued_at : ""),
      out_of_memory_(out_of_memory) {}

}  // namespace torch_tpu::runtime
