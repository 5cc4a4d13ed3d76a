// The tpu random generator. Counter-based by default, as CUDA's and XLA's are: its state is a
// seed and an offset (16 bytes, seed then offset, little-endian uint64s: CUDA's layout, which
// DTensor's RNG tracker reads and writes). Each random op takes its stream when it is issued,
// on the host and in program order, and moves the offset on by the numbers it draws (rounded
// up to 4). So the state belongs to the host: reading or setting it waits for nothing, the
// same seed gives the same numbers in every mode and on every rank, and a DTensor shard's op
// is placed by an offset alone.
//
// Random ops run on the chip's queue through PyTorch's CPU kernels; an op's kernel draws from
// an mt19937 whose whole state is Philox output for (seed, offset) (philox.h): a pure function
// of the two, independent of every other offset's, and not CPU's stream of numbers.
//
// TORCH_TPU_RNG=cpu selects CPU's stream instead, for comparing a tpu run with a CPU run: the
// generator is then an mt19937 that queued kernels consume in queue order, the same numbers a
// CPU generator with the same seed gives; it has no offset, and reading or setting its state
// waits for queued work.
#pragma once

#include <cstdint>

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace torch_tpu::privateuse1 {

// TORCH_TPU_RNG ("philox", the default, or "cpu"), read once.
bool uses_cpu_random_stream();

class TpuGeneratorImpl final : public c10::GeneratorImpl {
 public:
  explicit TpuGeneratorImpl(c10::DeviceIndex device, uint64_t seed = c10::default_rng_seed_val);

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

  // The CPU generator one random op's kernel draws from, taken when the op is issued: with
  // Philox, a fresh one for (seed, offset), the offset moved on by `draws`; with CPU's stream,
  // the generator's own, shared by every op in queue order.
  at::Generator take_op_stream(uint64_t draws);

 private:
  TpuGeneratorImpl* clone_impl() const override;
  void wait_for_queued_work() const;
  uint64_t seed_;
  uint64_t offset_ = 0;
  mutable at::Generator cpu_;  // CPU's stream (TORCH_TPU_RNG=cpu); mutable: locked in getters
};

// Chip `device`'s default generator (device < 0: current chip).
const at::Generator& default_generator(c10::DeviceIndex device);
at::Generator make_generator(c10::DeviceIndex device);

// A random op's generator argument as its CPU kernel takes it: a tpu generator's stream for
// one op of `draws` numbers (TpuGeneratorImpl::take_op_stream). Called once per op, at issue.
at::Generator op_stream_for(const at::Generator& tpu_generator, uint64_t draws);

}  // namespace torch_tpu::privateuse1
