"""Child process of the OpInfo sweep (see conformance/isolated.py for the protocol)."""

import argparse
import dataclasses
import warnings

from ..isolated import emit


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", required=True, help="file with one op id per line")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")

    import torch  # noqa: F401  (after the parent chose the mode through the environment)
    from torch.testing._internal.common_methods_invocations import op_db

    from .harness import evaluate, op_id

    by_id = {op_id(op): op for op in op_db}
    with open(args.items) as f:
        wanted = [line.strip() for line in f if line.strip()]
    for name in wanted:
        emit({"begin": name})
        results = evaluate(by_id[name])
        emit({"item": name, "results": [dataclasses.asdict(r) for r in results]})


if __name__ == "__main__":
    main()
