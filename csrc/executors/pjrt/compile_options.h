// The serialized xla.CompileOptionsProto that PJRT_Client_Compile takes (torch-free). We write
// the few fields we set by hand rather than depend on protobuf: an empty message aborts the CPU
// plugin (it CHECKs replica_count > 0), so replicas and partitions are always written.
#pragma once

#include <string>

namespace torch_tpu::executors::pjrt {

// CompileOptionsProto { executable_build_options (field 3) { num_replicas (field 4),
// num_partitions (field 5) }, compile_portable_executable (field 4), env_option_overrides
// (field 7) { "xla_allow_excess_precision": false, "xla_cpu_enable_fast_min_max": false } },
// replicas and partitions >= 1. Throws std::invalid_argument otherwise. A portable executable
// (one replica and partition only) runs on whichever device each execute names.
std::string compile_options_bytes(int num_replicas = 1, int num_partitions = 1,
                                  bool portable = false);

}  // namespace torch_tpu::executors::pjrt
