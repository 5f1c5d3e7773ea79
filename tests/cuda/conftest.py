"""CUDA-only tests: collected only where torch sees a GPU, so that a CI machine without one neither runs nor skips
them (`python -B -m pytest -n 0 tests/cuda` on a GPU machine)."""

import torch

collect_ignore_glob = [] if torch.cuda.is_available() else ["test_*.py"]
