// Errors raised by the host runtime. Torch-free: the PyTorch layer maps them to Python
// exceptions (OutOfMemoryError -> torch.OutOfMemoryError, the rest -> RuntimeError).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace torch_tpu::runtime {

// Any failure inside the runtime (bad argument, invalid chip or stream, async op failure).
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An allocation that does not fit in the chip's memory even after the cache was emptied.
class OutOfMemoryError : public RuntimeError {
 public:
  OutOfMemoryError(int chip, size_t requested, size_t free, size_t capacity);
  size_t requested() const { return requested_; }
  size_t free_bytes() const { return free_; }
  size_t capacity() const { return capacity_; }

 private:
  size_t requested_;
  size_t free_;
  size_t capacity_;
};

// A task that failed while a stream ran it asynchronously; raised at the next sync point.
class AsyncOpError : public RuntimeError {
 public:
  // `out_of_memory`: the op failed because chip memory ran out (raised as
  // torch.OutOfMemoryError). `issued_at`: where the host issued the op (e.g. the user's Python
  // line, "train.py:12 in step"), named in the message; null or empty when not known.
  AsyncOpError(const std::string& op_name, const std::string& message, bool out_of_memory = false,
               const char* issued_at = nullptr);
  const std::string& op_name() const { return op_name_; }
  const std::string& issued_at() const { return issued_at_; }
  bool out_of_memory() const { return out_of_memory_; }

 private:
  std::string op_name_;
  std::string issued_at_;
  bool out_of_memory_;
};

// " (issued at train.py:12 in step)" for an op whose issuing place is known, else "".
std::string issued_at_note(const char* issued_at);

}  // namespace torch_tpu::runtime
