#include "executors/pjrt/compile_options.h"

#include <cstdint>
#include <stdexcept>

namespace torch_tpu::executors::pjrt {

namespace {

// Protocol buffers' wire format: a key is (field number << 3 | wire type); varint = 0,
// length-delimited = 2. Varints carry 7 bits a byte, low bits first.
void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_varint_field(std::string& out, int field, uint64_t value) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | 0);
  put_varint(out, value);
}

void put_message_field(std::string& out, int field, const std::string& message) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | 2);
  put_varint(out, message.size());
  out += message;
}

void put_string_field(std::string& out, int field, const std::string& text) { put_message_field(out, field, text); }

constexpr int kExecutableBuildOptionsField = 3;  // in CompileOptionsProto
constexpr int kCompilePortableExecutableField = 4;
constexpr int kEnvOptionOverridesField = 7;      // map<string, OptionOverrideProto>
constexpr int kNumReplicasField = 4;             // in ExecutableBuildOptionsProto
constexpr int kNumPartitionsField = 5;
constexpr int kMapKeyField = 1, kMapValueField = 2;
constexpr int kBoolFieldField = 2;  // OptionOverrideProto's bool_field (a oneof member)

// One env_option_overrides entry setting DebugOptions field `name` to `value`: XLA applies
// overrides on top of its default debug options (a DebugOptions message of our own would
// replace every default with proto3's zero).
void put_bool_override(std::string& out, const std::string& name, bool value) {
  std::string override_value;
  put_varint_field(override_value, kBoolFieldField, value ? 1 : 0);
  std::string entry;
  put_string_field(entry, kMapKeyField, name);
  put_message_field(entry, kMapValueField, override_value);
  put_message_field(out, kEnvOptionOverridesField, entry);
}

}  // namespace

std::string compile_options_bytes(int num_replicas, int num_partitions, bool portable) {
  if (num_replicas < 1 || num_partitions < 1) {
    throw std::invalid_argument("compile options need at least one replica and one partition");
  }
  if (portable && (num_replicas != 1 || num_partitions != 1)) {
    throw std::invalid_argument("a portable executable has one replica and one partition");
  }
  std::string build_options;
  put_varint_field(build_options, kNumReplicasField, static_cast<uint64_t>(num_replicas));
  put_varint_field(build_options, kNumPartitionsField, static_cast<uint64_t>(num_partitions));
  std::string options;
  put_message_field(options, kExecutableBuildOptionsField, build_options);
  if (portable) put_varint_field(options, kCompilePortableExecutableField, 1);
  // XLA may otherwise keep a program's bfloat16/float16 intermediates in float32 and drop the
  // roundings between its ops; eager PyTorch rounds each op's result, and a fused program must
  // compute what its ops would one by one.
  put_bool_override(options, "xla_allow_excess_precision", false);
  // StableHLO's maximum and minimum propagate NaN, as torch.maximum does; XLA's CPU compiler
  // drops it unless its fast min/max is off (TPU and GPU compilers keep it either way).
  put_bool_override(options, "xla_cpu_enable_fast_min_max", false);
  return options;
}

}  // namespace torch_tpu::executors::pjrt
