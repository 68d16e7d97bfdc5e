"""The headline experiment of submodular-augment: `icml26 run submodular-augment`."""

from __future__ import annotations

from icml26_core import Claim, Experiment, Result, RunContext, Table


def run(ctx: RunContext) -> Result:
    """Measure the claim at ``ctx.scale`` and decide it with the core's builders."""
    seeds = range(ctx.pick(smoke=5, default=10, full=30))
    table = Table("metric per method (mean over seeds)", ["method", "metric", "n"])
    scores: dict[str, list[float]] = {"method": [], "baseline": [], "trivial floor": []}
    for seed in ctx.progress(seeds, "seeds"):
        raise NotImplementedError(f"measure every method on seed {seed}")
    for name, values in scores.items():
        table.add_row(method=name, metric=sum(values) / len(values), n=len(values))
    claim = Claim.superior(
        "The method beats the baseline.",
        scores["method"], scores["baseline"], names=("method", "baseline"), metric="metric",
    )
    return Result(tables=[table], claims=[claim])


EXPERIMENT = Experiment(
    name="submodular-augment",
    title="minimal augmentation for robust safety alignment by submodular selection of group actions",
    claim="The abstract's headline claim in one line.",
    run=run,
)
