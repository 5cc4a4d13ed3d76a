"""Child process of the ModuleInfo sweep (see conformance/isolated.py for the protocol)."""

import argparse
import dataclasses
import warnings

from ..isolated import emit


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", required=True, help="file with one module name per line")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")

    import torch  # noqa: F401  (after the parent chose the mode through the environment)
    from torch.testing._internal.common_modules import module_db

    from .harness import evaluate

    by_name = {info.name: info for info in module_db}
    with open(args.items) as f:
        wanted = [line.strip() for line in f if line.strip()]
    for name in wanted:
        emit({"begin": name})
        results = evaluate(by_name[name])
        emit({"item": name, "results": [dataclasses.asdict(r) for r in results]})


if __name__ == "__main__":
    main()
