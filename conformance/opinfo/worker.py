"""Child process of the sweep: evaluates the given ops in order and prints one JSON line per
event, so the parent can tell which op was running if this process dies.

    {"begin": "<op id>"}                       before each op
    {"op": "<op id>", "results": [...]}        after it
"""

import argparse
import dataclasses
import json
import sys
import warnings


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", required=True, help="file with one op id per line")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")

    import torch  # noqa: F401  (after the parent chose the mode through the environment)
    from torch.testing._internal.common_methods_invocations import op_db

    from .harness import evaluate, op_id

    by_id = {op_id(op): op for op in op_db}
    with open(args.ops) as f:
        wanted = [line.strip() for line in f if line.strip()]
    out = sys.stdout
    for name in wanted:
        print(json.dumps({"begin": name}), file=out, flush=True)
        results = evaluate(by_id[name])
        print(json.dumps({"op": name, "results": [dataclasses.asdict(r) for r in results]}),
              file=out, flush=True)


if __name__ == "__main__":
    main()
