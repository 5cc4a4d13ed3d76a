"""The demo's training step with and without a busy neighbour process: how much CPU eager, tpu
Strict and tpu fused slow down when another program keeps one of the machine's cores busy.
Target (the co-tenant issue): slowdown (busy block time / quiet block time) <= 1.5x.

Each contender trains in a fresh child process of its own (so environment settings such as
OMP_WAIT_POLICY, passed with --env, take effect before libgomp loads, and no contender's
threads or caches affect another's). After warm-up the child runs rounds of two blocks of
`--block-steps` training steps (TrainingStep from python/torch_tpu/demo: forward, backward,
AdamW, loss.item()): one on a quiet machine, one while a neighbour process spins (a pure-Python
busy loop, no torch, started before the block and killed after it, with a deadline of its own
so it never outlives the run), their order swapped every round. The slowdown is the median over
rounds of busy / quiet (two blocks of the same round, run back to back, as in
benchmarks/paired_blocks.py, so a slow spell of the machine cannot decide it). A co-tenant is a
program that stays: by default each block follows 1 s of untimed training steps in its
condition (`--settle-s`), so it measures the steady state with a neighbour, not the 100-300 ms
the tpu contenders' host team governor takes to notice one arrive or leave. `--settle-s 0`
starts each busy block as the neighbour does and so measures that reaction too (with blocks of
~0.3 s it weighs heavily).

Also reported per contender: the process CPU time per step (getrusage; on a quiet machine
about twice the wall time means both cores busy, spinning included) and the share of a core the
neighbour got during the busy blocks (from /proc/<pid>/stat; 1.0 means it had a core of its
own), and the most cores' worth any other program used during a block ("others", from
/proc/stat minus this process and the neighbour: near 0 on a quiet machine; above ~0.1 the run
was disturbed). Before and after the run the parent samples /proc/stat for 1 s and reports how
busy the machine was and whether a compiler (cc1plus) was running. For the tpu contenders it
also reports what the host team governor did (torch_tpu.metrics()["host_team"]: how often the
main thread's OpenMP team shrank and grew back, and its size at the end of quiet and of busy
blocks); `--env TORCH_TPU_HOST_TEAM=fixed` runs them without it.

Prints a table and writes benchmarks/results/co_tenant.json.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONTENDERS = ["cpu", "strict", "fused"]
TARGET = 1.5

# The neighbour: one busy Python thread, no imports beyond time, gone by its deadline at the
# latest. It prints a line once it spins, so the block starts with it running.
NEIGHBOUR = ("import sys, time\n"
             "deadline = time.monotonic() + float(sys.argv[1])\n"
             "print('spinning', flush=True)\n"
             "n = 0\n"
             "while True:\n"
             "    n += 1\n"
             "    if n % 100000 == 0 and time.monotonic() > deadline:\n"
             "        break\n")


class Neighbour:
    """A separate process spinning one core from __enter__ until __exit__ (or `limit_s`)."""

    def __init__(self, limit_s=120.0):
        self.limit_s = limit_s
        self.process = None
        self.cpu_share = 0.0
        self.cpu_seconds = 0.0

    def _cpu_seconds(self):
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __enter__(self):
        self.process = subprocess.Popen([sys.executable, "-S", "-c", NEIGHBOUR, str(self.limit_s)],
                                        stdout=subprocess.PIPE, text=True)
        self.process.stdout.readline()
        self.restart_measure()
        return self

    def restart_measure(self):
        """Measures its share of a core from now on (not while the block had not begun)."""
        self._start = (time.perf_counter(), self._cpu_seconds())

    def __exit__(self, *exc):
        try:
            wall, cpu = time.perf_counter() - self._start[0], self._cpu_seconds() - self._start[1]
            self.cpu_seconds = cpu
            self.cpu_share = cpu / wall if wall > 0 else 0.0
        finally:
            self.process.kill()
            self.process.wait()
        return False


def _process_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _machine_busy_seconds():
    """CPU-seconds all CPUs spent busy since boot (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:9]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


def child(contender, rounds, block_steps, warmup, settle_s=0.0, before_block=None):
    """Per-round quiet and busy block times of `contender`'s training step, in this process,
    each block after `settle_s` seconds of untimed steps in its condition. `before_block(busy)`
    (optional) is called before each block: a hook for experiments."""
    import torch
    import torch_tpu
    from torch_tpu.demo.train import TrainingStep

    device = "cpu" if contender == "cpu" else "tpu"
    if device == "tpu":
        torch_tpu.set_mode(contender)
    trainer = TrainingStep(device)
    counter = [0]

    def block():
        start = time.perf_counter(), _process_cpu_seconds(), _machine_busy_seconds()
        for _ in range(block_steps):
            trainer.step(counter[0])
            counter[0] += 1
        return (time.perf_counter() - start[0], _process_cpu_seconds() - start[1],
                _machine_busy_seconds() - start[2])

    def settle():
        deadline = time.perf_counter() + settle_s
        while time.perf_counter() < deadline:
            trainer.step(counter[0])
            counter[0] += 1

    for _ in range(warmup):
        trainer.step(counter[0])
        counter[0] += 1
    if device == "tpu" and hasattr(torch_tpu, "wait_for_kernel_compiles"):
        torch_tpu.wait_for_kernel_compiles()
    result = {"contender": contender, "threads": torch.get_num_threads(),
              "quiet": [], "busy": [], "quiet_cpu": [], "busy_cpu": [], "neighbour_share": [],
              "foreign_cores": [], "quiet_team": [], "busy_team": []}
    for r in range(rounds):
        for busy in ((False, True) if r % 2 == 0 else (True, False)):
            if before_block is not None:
                before_block(busy)
            neighbour_cpu = 0.0
            if busy:
                with Neighbour() as neighbour:
                    settle()
                    neighbour.restart_measure()
                    wall, cpu, machine = block()
                result["neighbour_share"].append(neighbour.cpu_share)
                neighbour_cpu = neighbour.cpu_seconds
            else:
                settle()
                wall, cpu, machine = block()
            # Cores' worth used by other programs (neither this process nor the neighbour):
            # ~0 on a quiet machine; more means the run was disturbed.
            result["foreign_cores"].append(max(0.0, machine - cpu - neighbour_cpu) / wall)
            result["busy" if busy else "quiet"].append(wall)
            result["busy_cpu" if busy else "quiet_cpu"].append(cpu)
            if device == "tpu":
                team = torch_tpu.metrics()["host_team"]["threads"]
                result["busy_team" if busy else "quiet_team"].append(team)
    result["tokens_per_block"] = block_steps * trainer.tokens_per_step
    if device == "tpu":
        result["host_team"] = torch_tpu.metrics()["host_team"]
    return result


def run_child(contender, args, extra_env):
    env = dict(os.environ)
    env.update(extra_env)
    command = [sys.executable, os.path.abspath(__file__), "--child", contender,
               "--rounds", str(args.rounds), "--block-steps", str(args.block_steps),
               "--warmup", str(args.warmup), "--settle-s", str(args.settle_s)]
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{contender} child failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def machine_state(seconds=1.0):
    """How busy the machine was over `seconds` before the run (fraction of all CPUs, 0-1), the
    load average, and how many compiler processes ran."""
    def times():
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        return sum(values), values[3] + values[4]  # total, idle + iowait

    total0, idle0 = times()
    time.sleep(seconds)
    total1, idle1 = times()
    busy = 1.0 - (idle1 - idle0) / max(total1 - total0, 1)
    compilers = subprocess.run(["pgrep", "-c", "cc1plus"], capture_output=True, text=True).stdout
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    return {"busy_fraction": busy, "loadavg": load, "cc1plus": int(compilers.strip() or 0)}


def summarize(run):
    ratios = [b / q for q, b in zip(run["quiet"], run["busy"])]
    return {
        "slowdown": statistics.median(ratios), "slowdown_min": min(ratios), "slowdown_max": max(ratios),
        "quiet_tokens_per_second": run["tokens_per_block"] / statistics.median(run["quiet"]),
        "busy_tokens_per_second": run["tokens_per_block"] / statistics.median(run["busy"]),
        "quiet_cpu_per_wall": statistics.median(c / w for c, w in zip(run["quiet_cpu"], run["quiet"])),
        "busy_cpu_per_wall": statistics.median(c / w for c, w in zip(run["busy_cpu"], run["busy"])),
        "neighbour_share": statistics.median(run["neighbour_share"]),
        "foreign_cores_max": max(run["foreign_cores"]),
        "met": statistics.median(ratios) <= TARGET,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contenders", default=",".join(CONTENDERS),
                        help="comma-separated, of: " + ", ".join(CONTENDERS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--block-steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--settle-s", type=float, default=1.0,
                        help="untimed steps for this long after the neighbour starts or stops, "
                             "before each block (0: blocks start as it does)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="set in the children's environment (e.g. OMP_WAIT_POLICY=PASSIVE)")
    parser.add_argument("--output", default=os.path.join(HERE, "results", "co_tenant.json"))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.rounds, args.block_steps, args.warmup,
                               args.settle_s)))
        return

    contenders = [c for c in args.contenders.split(",") if c]
    extra_env = dict(item.split("=", 1) for item in args.env)
    before = machine_state()
    runs = {c: run_child(c, args, extra_env) for c in contenders}
    after = machine_state()
    results = {c: summarize(runs[c]) for c in contenders}

    env_note = " ".join(args.env) or "default environment"
    print(f"demo training step (batch 8 x seq 64, AdamW, loss.item()), {os.cpu_count()} CPUs, "
          f"{env_note}; median of {args.rounds} rounds of {args.block_steps}-step blocks"
          f"{f' after {args.settle_s:g} s to settle' if args.settle_s else ''}, "
          f"quiet vs one busy neighbour process")
    print(f"{'contender':<10}{'quiet tok/s':>12}{'busy tok/s':>12}{'slowdown':>10}{'(min-max)':>13}"
          f"{'cpu/wall q':>12}{'cpu/wall b':>12}{'nbr core':>10}{'others':>8}   target <= {TARGET}x")
    for c in contenders:
        s = results[c]
        spread = f"({s['slowdown_min']:.2f}-{s['slowdown_max']:.2f})"
        print(f"{c:<10}{s['quiet_tokens_per_second']:>12,.0f}{s['busy_tokens_per_second']:>12,.0f}"
              f"{s['slowdown']:>9.2f}x{spread:>13}"
              f"{s['quiet_cpu_per_wall']:>12.2f}{s['busy_cpu_per_wall']:>12.2f}"
              f"{s['neighbour_share']:>10.2f}{s['foreign_cores_max']:>8.2f}   {'met' if s['met'] else 'NOT met'}")
    for c in contenders:
        team = runs[c].get("host_team")
        if team is not None:
            print(f"{c} host team ({team['policy']}): {team['shrinks']} shrinks, "
                  f"{team['grows']} grows; threads at the end of quiet blocks "
                  f"{runs[c]['quiet_team']}, of busy blocks {runs[c]['busy_team']}")
    print(f"machine before the run: {before['busy_fraction']:.0%} busy, load {' '.join(before['loadavg'])}, "
          f"{before['cc1plus']} cc1plus; after: {after['busy_fraction']:.0%} busy, {after['cc1plus']} cc1plus")
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump({"cpus": os.cpu_count(), "target_slowdown": TARGET, "env": extra_env,
                   "block_steps": args.block_steps, "rounds": args.rounds,
                   "settle_s": args.settle_s,
                   "machine_before": before, "machine_after": after,
                   "results": results, "runs": runs}, f, indent=2)


if __name__ == "__main__":
    main()
