"""Rank script: every c10d collective a CUDA program uses, checked against values computed
locally on CPU (collective_checks.py: the data collectives; group_checks.py: async work,
futures, functional and object collectives, groups, DeviceMesh). Run by
test_dist_collectives.py (2 ranks; 4 in the slow tier).
"""

import collective_checks  # noqa: F401  (registers its checks, in this order)
import group_checks  # noqa: F401
from collective_inputs import checks
from worker_utils import main

if __name__ == "__main__":
    main(checks)
