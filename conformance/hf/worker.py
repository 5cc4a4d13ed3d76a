"""Child process of the Hugging Face sweep (see conformance/isolated.py for the protocol)."""

import argparse
import warnings

import os

from ..isolated import COMPILE_BACKEND, emit


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", required=True, help="file with one model type per line")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")

    import torch  # after the parent chose the mode through the environment
    import transformers

    transformers.logging.set_verbosity_error()
    from .harness import evaluate

    with open(args.items) as f:
        wanted = [line.strip() for line in f if line.strip()]
    for model_type in wanted:
        emit({"begin": model_type})
        # Model code may leave process-wide settings behind; each model starts from defaults.
        torch.set_default_dtype(torch.float32)
        torch.set_default_device(None)
        torch.set_grad_enabled(True)
        record = evaluate(model_type, lambda stage: emit({"stage": stage}),
                          compile_backend=os.environ.get(COMPILE_BACKEND))
        emit({"item": model_type, "results": [record]})


if __name__ == "__main__":
    main()
