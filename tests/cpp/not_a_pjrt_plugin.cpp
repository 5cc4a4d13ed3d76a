// A loadable shared library that is not a PJRT plugin (it exports no GetPjrtApi).
extern "C" __attribute__((visibility("default"))) int torch_tpu_not_a_plugin() { return 1; }
