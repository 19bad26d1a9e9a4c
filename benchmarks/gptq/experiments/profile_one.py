"""Launch gptq_matmul a few times at one shape, for Nsight Compute (ncu) to profile.

    ncu --kernel-name regex:gptq --launch-skip 2 --launch-count 1 \\
        python3 benchmarks/gptq/experiments/profile_one.py M K N \\
        [block_m block_n block_k group_m split_k num_warps num_stages swap_ab]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/gptq: common.py and its siblings
from common import random_layer  # noqa: E402

from solutions.gptq import GPTQConfig, gptq_matmul  # noqa: E402


def main() -> int:
    if not torch.cuda.is_available():
        print("profile_one.py needs a CUDA GPU; nothing to do.")
        return 0
    m, k, n = (int(x) for x in sys.argv[1:4])
    cfg = None
    if len(sys.argv) > 4:
        *nums, swap = sys.argv[4:12]
        cfg = GPTQConfig(*(int(x) for x in nums), swap_ab=swap == "1")
    w = random_layer(k, n)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    for _ in range(4):
        gptq_matmul(a, w, config=cfg)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
