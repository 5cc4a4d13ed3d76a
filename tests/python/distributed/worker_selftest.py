"""Rank script for test_dist_launcher.py (no torch: it tests the launcher only)."""

import json
import os
import subprocess
import sys
import time

mode = sys.argv[1]
rank = int(os.environ["RANK"])
keys = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
        "DIST_BACKEND", "DIST_DEVICE", "OMP_NUM_THREADS", "TORCH_TPU_MODE"]
print("ENV " + json.dumps({k: os.environ.get(k) for k in keys}), flush=True)
print(f"stderr of rank {rank}", file=sys.stderr, flush=True)
if mode == "hang":
    child = subprocess.Popen(["sleep", "120"])  # must die with the rank
    print(f"CHILD {child.pid}", flush=True)
    time.sleep(120)
elif mode == "one_fails":
    if rank == 1:
        sys.exit(3)
    time.sleep(120)
