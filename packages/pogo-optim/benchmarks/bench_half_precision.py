"""Orthogonality error of half-precision parameters over the steps (float32 update).

16 matrices of 64 x 128 (orthonormal rows), a least-squares loss, POGO-VAdam at lr
0.02; prints the largest ``||X X^T - I||_F`` (computed in float64 from the stored
half-precision matrix) at the start, after 50 and after 1000 steps.

    uv run python packages/pogo-optim/benchmarks/bench_half_precision.py
"""

from __future__ import annotations

import torch
from pogo_optim import POGO, orthogonality_error, random_stiefel


def drift(dtype: torch.dtype, steps: int = 1000, marks=(50, 1000)) -> dict[int, float]:
    """``{step: max orthogonality error}`` of one run in ``dtype``."""
    g = torch.Generator().manual_seed(0)
    x0 = random_stiefel(16, 64, 128, generator=g)
    a = torch.randn(16, 128, 32, generator=g)
    b = torch.randn(16, 64, 32, generator=g)
    x = torch.nn.Parameter(x0.to(dtype))
    opt = POGO([x], lr=0.02)
    out = {0: float(orthogonality_error(x.detach().double()).max())}
    for t in range(1, steps + 1):
        opt.zero_grad()
        (x.float() @ a - b).square().sum().backward()
        opt.step()
        if t in marks:
            out[t] = float(orthogonality_error(x.detach().double()).max())
    return out


def main() -> None:
    torch.set_num_threads(1)
    print("| dtype | eps sqrt(p) / 3 | start | 50 steps | 1000 steps |")
    print("|---|---|---|---|---|")
    for dtype in (torch.float16, torch.bfloat16):
        d = drift(dtype)
        rounding = torch.finfo(dtype).eps * 64**0.5 / 3
        print(
            f"| {str(dtype).removeprefix('torch.')} | {rounding:.2g} | {d[0]:.2g} | {d[50]:.2g} "
            f"| {d[1000]:.2g} |"
        )


if __name__ == "__main__":
    main()
