// The tpu random generator. Random ops run on the chip's queue through PyTorch's CPU kernels,
// so the generator wraps a CPU generator (mt19937 + normal cache) that those kernels consume in
// queue order; the same seed gives the same numbers in every mode. Reading or changing the
// state from the host first waits for queued work, so it never races a running kernel.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace torch_tpu::privateuse1 {

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

  // The CPU generator that queued kernels use (only on the chip's queue).
  const at::Generator& cpu_generator() const { return cpu_; }

 private:
  TpuGeneratorImpl* clone_impl() const override;
  void wait_for_queued_work() const;
  mutable at::Generator cpu_;  // mutable: locking its mutex in const getters
};

// Chip `device`'s default generator (device < 0: current chip).
const at::Generator& default_generator(c10::DeviceIndex device);
at::Generator make_generator(c10::DeviceIndex device);

// The CPU generator a queued kernel should use for a tpu generator argument.
at::Generator cpu_generator_for(const at::Generator& tpu_generator);

}  // namespace torch_tpu::privateuse1
