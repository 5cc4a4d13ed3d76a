"""What a second busy thread adds on this machine, measured at the time of a benchmark run.

The tpu modes overlap work: the host issues (or records) ops while the stream worker runs
earlier ones, and a waiting host runs the rest with its two-thread team. How much that buys
depends on how much throughput two busy threads get out of the machine's two CPUs. On the VMs
these benchmarks run on, that changes from run to run and even within one: at times the two
vCPUs act like two cores, at times like two hyperthreads of one. CPU eager, which mostly runs
one busy thread (its kernels' helper thread only spins while Python runs), loses far less
there. The benchmarks print this figure next to their ratios, so a reader can tell which
state a run was in.
"""

import statistics
import threading
import time

import torch


def _matmul_seconds(count, a, b):
    start = time.perf_counter()
    for _ in range(count):
        torch.mm(a, b)
    return time.perf_counter() - start


def two_thread_throughput(count=200, repeats=3):
    """Throughput of two threads running single-threaded CPU matmuls at once, over one thread
    running them alone (median of `repeats`): 2.0 means two independent cores, 1.0 one core's
    worth shared by both. PyTorch's intra-op thread count is restored afterwards."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = torch.randn(256, 256), torch.randn(256, 256)
        _matmul_seconds(count // 4, a, b)  # warm-up
        ratios = []
        for _ in range(repeats):
            alone = _matmul_seconds(count, a, b)
            together = [0.0, 0.0]

            def run(slot):
                together[slot] = _matmul_seconds(count, a, b)

            threads = [threading.Thread(target=run, args=(slot,)) for slot in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            ratios.append(2 * alone / max(together))
        return statistics.median(ratios)
    finally:
        torch.set_num_threads(previous)


def describe(start, end):
    return (f"machine: two busy threads got {start:.2f}x one thread's throughput at the start, "
            f"{end:.2f}x at the end (2.0: two free cores)")


if __name__ == "__main__":
    print(f"two busy threads: {two_thread_throughput():.2f}x one thread's throughput")
