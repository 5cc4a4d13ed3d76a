"""Timing contenders on a machine whose speed drifts (these VMs change by 20-30% within a
minute): rounds of short blocks, one block per contender per round, the order rotated each
round. A ratio is taken between blocks of the same round (same machine state), and the
median over rounds is reported, so a slow spell during one contender's run cannot decide it.
"""

import statistics
import time


def time_rounds(blocks, rounds):
    """{name: [seconds of its block in round r]} for `blocks` ({name: callable running one
    block}), each called once per round, in an order rotated by one each round."""
    names = list(blocks)
    seconds = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            start = time.perf_counter()
            blocks[name]()
            seconds[name].append(time.perf_counter() - start)
    return seconds


def median_speedup(seconds, contender, baseline):
    """Median over rounds of baseline's block time / contender's (> 1: contender faster)."""
    return statistics.median(b / c for b, c in zip(seconds[baseline], seconds[contender]))


def median_rate(seconds, name, work_per_block):
    """Work per second of `name`'s median block."""
    return work_per_block / statistics.median(seconds[name])
