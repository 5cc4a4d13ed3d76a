"""Runs the test files of PyTorch's reference out-of-tree backend (OpenReg) against tpu, as an
outside check: copies them from a PyTorch source tree (check out the release matching the pinned
torch) into a scratch folder, renames the device, runs each file on two host chips (the tests
assume two devices) and prints, per file, what passed and which failures are OpenReg's own
(its private helpers, messages and defaults), each with its reason. Any other failure is ours.
Nothing of PyTorch's is kept in this repository.

    python scripts/openreg_outside_check.py --pytorch-src /path/to/pytorch [--scratch DIR]

test_autograd.py imports psutil (pip install psutil in the scratch environment to run it).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

TESTS = "test/cpp_extensions/open_registration_extension/torch_openreg/tests"
FILES = ["test_device.py", "test_memory.py", "test_streams.py", "test_event.py",
         "test_autograd.py", "test_rng.py", "test_storage.py", "test_misc.py",
         "test_autocast.py", "test_profiler.py", "test_utils.py", "test_ops.py", "test_rnn.py",
         "test_sdpa.py"]

OPENREG_ONLY = "a helper only OpenReg's extension registers"
# test id -> why it fails on tpu for a reason of OpenReg's, not ours.
OPENREG_OWN = {
    "test_device.py::TestDevice::test_device_capability":
        "OpenReg lists quantized dtypes; tpu does not support them yet (README)",
    "test_device.py::TestDevice::test_device_poison_fork": "OpenReg's wording of the error",
    "test_device.py::TestDevice::test_device_properties":
        "expects a dict from torch.accelerator.get_memory_info, a tuple in this torch",
    "test_device.py::TestDevice::test_invalid_device_index": "OpenReg's wording of the error",
    "test_rng.py::TestRNG::test_offset_unsupported": "calls torch.openreg.set_offset, " + OPENREG_ONLY,
    "test_autocast.py::TestAutocast::test_autocast_fast_dtype":
        "OpenReg's autocast default is float16; tpu's is bfloat16",
    "test_autocast.py::TestAutocast::test_tpu_autocast_error_message":
        "a newer torch's wording of the autocast warning",
    "test_autocast.py::TestAutocast::test_tpu_autocast_float32_supported":
        "OpenReg forces dot to float32; tpu widens as CUDA does",
    "test_ops.py::TestFactory::test_empty": "named tensors are gone from this torch (CPU too)",
    "test_ops.py::TestQuantization::test_quantize": "quantized dtypes: not supported yet (README)",
    "test_ops.py::TestSDPA::test_fused_sdp_choice_privateuseone":
        "OpenReg picks its overrideable SDPA kernel; tpu picks the math one",
    "test_ops.py::TestSDPAExtended::test_fused_sdp_choice_with_mask":
        "OpenReg picks its overrideable SDPA kernel; tpu picks the math one",
    "test_ops.py::TestSDPA::test_scaled_dot_product_fused_attention_overrideable_backward":
        "calls the overrideable attention op, " + OPENREG_ONLY,
    "test_sdpa.py::TestSDPAPrivateUse1Only::test_fused_sdp_choice_privateuseone":
        "OpenReg picks its overrideable SDPA kernel; tpu picks the math one",
    "test_sdpa.py::TestSDPAPrivateUse1Only::test_scaled_dot_product_fused_attention_overrideable_backward":
        "calls the overrideable attention op, " + OPENREG_ONLY,
    "test_ops.py::TestSTUBExtended::test_custom_abs": "torch.ops.openreg.*, " + OPENREG_ONLY,
    "test_ops.py::TestAutogradFunction::test_compile_autograd_function_aliasing":
        "torch.ops.openreg.*, " + OPENREG_ONLY,
    "test_ops.py::TestAutogradFunction::test_compile_autograd_function_returns_self":
        "torch.ops.openreg.*, " + OPENREG_ONLY,
    "test_storage.py::TestSerialization::test_serialization":
        "OpenReg's C++ backend-metadata hooks",
    "test_storage.py::TestSerialization::test_copy_backend_meta":
        "OpenReg's C++ backend-metadata hooks",
    "test_storage.py::TestSerialization::test_serialization_metadata_preservation":
        "OpenReg's C++ backend-metadata hooks",
    "test_storage.py::TestSerialization::test_fake_tensor_metadata_preservation":
        "OpenReg's C++ backend-metadata hooks",
    "test_storage.py::TestSerialization::test_fake_tensor_metadata_preservation_functional":
        "OpenReg's C++ backend-metadata hooks",
}
for _name in ("aliasing_basic", "aliasing_no_grad", "returns_self_basic", "returns_self_no_grad"):
    OPENREG_OWN[f"test_ops.py::TestCustomAutogradFunctions::test_custom_autograd_fn_{_name}"] = (
        "torch.ops.openreg.*, " + OPENREG_ONLY)


def renamed(text: str) -> str:
    """OpenReg's device, module and constants as tpu's."""
    text = text.replace("torch_openreg", "torch_tpu").replace("OPENREG", "TPU")
    return re.sub(r"openreg", "tpu", text)


def run_file(name: str, scratch: str) -> tuple[list[str], list[str], str]:
    """(passed ids, failed ids, pytest's last line) of one test file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_TPU_", "TPU_"))}
    env.update({"TPU_SKIP_MDS_QUERY": "1", "TORCH_TPU_HOST_CHIPS": "2",
                "TORCH_DEVICE_BACKEND_AUTOLOAD": "1"})
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
                             name], cwd=scratch, env=env, capture_output=True, text=True,
                            timeout=900)
    lines = result.stdout.splitlines()
    passed = [line.split()[1] for line in lines if line.startswith("PASSED ")]
    failed = [line.split()[1] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return passed, failed, lines[-1] if lines else result.stderr[-300:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pytorch-src", required=True, help="a PyTorch source tree")
    parser.add_argument("--scratch", default=None, help="where the renamed copies go")
    args = parser.parse_args()
    scratch = args.scratch or tempfile.mkdtemp(prefix="openreg-check-")
    os.makedirs(scratch, exist_ok=True)
    ours = []
    for name in FILES:
        source = os.path.join(args.pytorch_src, TESTS, name)
        if not os.path.exists(source):
            print(f"{name}: not in this PyTorch tree")
            continue
        with open(source) as f, open(os.path.join(scratch, name), "w") as out:
            out.write(renamed(f.read()))
        passed, failed, last = run_file(name, scratch)
        known = [t for t in failed if t in OPENREG_OWN]
        print(f"{name}: {len(passed)} passed, {len(failed)} failed "
              f"({len(known)} OpenReg's own) | {last}")
        for test in known:
            print(f"    known  {test}: {OPENREG_OWN[test]}")
        for test in failed:
            if test not in OPENREG_OWN:
                print(f"    OURS   {test}")
                ours.append(test)
    print(f"scratch folder: {scratch}; failures for reasons of ours: {len(ours)}")
    sys.exit(1 if ours else 0)


if __name__ == "__main__":
    main()
