"""Time per training step: primal-dual vs ERM, and ours vs cooper-optim.

`uv run python packages/descent-transformers/benchmarks/bench_step.py` (writes
bench_step.txt beside this file). The model is the experiment's UnrolledTransformer
(6 blocks, width 32, 4-frame 32 x 32 clips, batch 8), one thread. Both sides compute
the readout at every layer (ERM needs only the last one; the issue asks for the
overhead of the constrained step at equal forward work); a third row times ERM that
reads only the last layer, the cost a user of plain ERM pays. Times are interleaved in
one process (icml26_core.timing.compare_times), so machine load hits both sides alike.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
from descent_transformers import (
    DescentConstraints,
    PrimalDualTrainer,
    UnrolledTransformer,
    layer_losses,
)
from icml26_core.timing import compare_times

REPEATS = 15
STEPS_PER_CALL = 5


def _setup(seed: int = 0):
    torch.manual_seed(seed)
    net = UnrolledTransformer(dim=32, depth=6, heads=4, patch=8, frames=4, size=32)
    x = torch.rand(8, 4, 32, 32)
    noisy = x + 0.1 * torch.randn_like(x)
    return net, x, noisy


def _ms(seconds_per_call: float) -> str:
    return f"{1e3 * seconds_per_call / STEPS_PER_CALL:.1f} ms"


def main() -> None:
    torch.set_num_threads(1)
    lines = [
        f"threads 1, {REPEATS} interleaved rounds of {STEPS_PER_CALL} steps, load {os.getloadavg()}"
    ]

    net_e, x, noisy = _setup()
    opt_e = torch.optim.Adam(net_e.parameters(), lr=1e-3)

    def erm_all():
        for _ in range(STEPS_PER_CALL):
            loss = layer_losses(net_e, noisy, x)[-1]
            opt_e.zero_grad()
            loss.backward()
            opt_e.step()

    def erm_last():
        for _ in range(STEPS_PER_CALL):
            loss = torch.nn.functional.mse_loss(net_e(noisy), x)
            opt_e.zero_grad()
            loss.backward()
            opt_e.step()

    net_o, _, _ = _setup()
    trainer = PrimalDualTrainer(
        net_o, None, torch.optim.Adam(net_o.parameters(), lr=1e-3), DescentConstraints(6, 0.01, 1.0)
    )

    def ours():
        for _ in range(STEPS_PER_CALL):
            trainer.step(noisy, x)

    c = compare_times(ours, erm_all, repeats=REPEATS, warmup=2, names=("primal-dual", "ERM"))
    ev = c.speedup()
    lines.append(
        f"primal-dual / ERM (readout at every layer): {c.median_a / c.median_b:.3f}x "
        f"({_ms(c.median_a)} vs {_ms(c.median_b)} per step); ERM over ours: {ev.summary()}"
    )
    c2 = compare_times(ours, erm_last, repeats=REPEATS, warmup=2, names=("primal-dual", "ERM last"))
    lines.append(
        f"primal-dual / ERM (last layer only): {c2.median_a / c2.median_b:.3f}x "
        f"({_ms(c2.median_a)} vs {_ms(c2.median_b)} per step)"
    )
    try:
        import cooper
    except ImportError:
        lines.append("cooper-optim not installed: no comparison")
    else:
        net_c, _, _ = _setup()

        class CMP(cooper.ConstrainedMinimizationProblem):
            def __init__(self):
                super().__init__()
                self.constraint = cooper.Constraint(
                    multiplier=cooper.multipliers.DenseMultiplier(num_constraints=6),
                    constraint_type=cooper.ConstraintType.INEQUALITY,
                )

            def compute_cmp_state(self, model):
                ls = layer_losses(model, noisy, x)
                g = ls[1:] - 0.99 * ls[:-1]
                return cooper.CMPState(
                    loss=ls[-1],
                    observed_constraints={self.constraint: cooper.ConstraintState(violation=g)},
                )

        cmp = CMP()
        copt = cooper.optim.SimultaneousOptimizer(
            cmp=cmp,
            primal_optimizers=torch.optim.Adam(net_c.parameters(), lr=1e-3),
            dual_optimizers=torch.optim.SGD(cmp.dual_parameters(), lr=1.0, maximize=True),
        )

        def coop():
            for _ in range(STEPS_PER_CALL):
                copt.roll(compute_cmp_state_kwargs={"model": net_c})

        c3 = compare_times(ours, coop, repeats=REPEATS, warmup=2, names=("ours", "cooper"))
        lines.append(
            f"ours / cooper SimultaneousOptimizer: {c3.median_a / c3.median_b:.3f}x "
            f"({_ms(c3.median_a)} vs {_ms(c3.median_b)} per step)"
        )
    lines.append(f"load after: {os.getloadavg()}")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    (Path(__file__).with_suffix(".txt")).write_text(text)


if __name__ == "__main__":
    main()
