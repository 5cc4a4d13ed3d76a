"""How the PJRT runtime uses device memory (the CPU plugin's buffers are host memory, so the
process's peak resident size shows them): an in-place update donates the storage's buffer to
its new contents instead of holding old and new at once, and a program that overwrites a
storage whole (zero_, fill_, copy_ or out= into a fresh tensor) does not take its old contents
as an input. Each test runs a fresh interpreter."""

from test_pjrt_runtime import run_json

MiB = 2**20


def test_in_place_updates_and_fresh_writes_hold_one_buffer():
    result = run_json("""
import resource
def peak(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
n = 64 * 2**20 // 4                      # 64 MiB of float32
start = peak()
p = torch.ones(1, device="tpu").expand(n).contiguous()
z = torch.zeros(n, device="tpu")         # empty + zero_: nothing uploaded
torch.tpu.synchronize()
created = peak()
for _ in range(3):
    p.add_(1)
    z.mul_(2).add_(p)
torch.tpu.synchronize()
updated = peak()
print(json.dumps({"created": created - start, "updated": updated - created,
                  "p": p[:2].cpu().tolist(), "z": z[:2].cpu().tolist()}))
""")
    assert result["p"] == [4.0, 4.0] and result["z"] == [18.0, 18.0]
    # Two 64 MiB tensors; each write of one whole before (zeros uploaded and kept beside the
    # result, or old and new contents at once) would add 64 MiB.
    assert result["created"] < 2 * 64 * MiB + 48 * MiB, result
    assert result["updated"] < 32 * MiB, result


def test_a_shared_buffer_is_not_donated():
    result = run_json("""
a = torch.arange(8., device="tpu")
b = torch.empty(8, device="tpu")
b.untyped_storage().copy_(a.untyped_storage())  # a whole copy: one immutable buffer, two storages
a.mul_(3)
a.add_(1)
print(json.dumps({"a": a.cpu().tolist(), "b": b.cpu().tolist()}))
""")
    assert result["a"] == [3.0 * i + 1 for i in range(8)]
    assert result["b"] == [float(i) for i in range(8)]
