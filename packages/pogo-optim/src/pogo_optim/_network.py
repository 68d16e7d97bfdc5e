"""An MLP with orthogonal hidden layers on MNIST, trained by each method (experiment part 3).

``784 -> 128`` (orthonormal rows) ``-> ReLU -> 128 -> 128`` (orthogonal) ``-> ReLU -> 10``
(free); biases and the head are free parameters, trained by Adam at lr 1e-3 for every
method (inside the same optimizer object, in their own param group). Each method's
learning rate for the orthogonal weights is chosen from a 4-value grid on a
validation split of the training images; then every method trains the same initial
network on the same minibatches, stepped in turn. The floor keeps the orthogonal
layers at their random initialization and trains only the free parameters.
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn.functional as F

from pogo_optim._methods import geoopt_manifold
from pogo_optim.optimizers import POGO, Landing
from pogo_optim.stiefel import orthogonality_error, random_stiefel

HIDDEN = 128
LR_FREE = 1e-3

FLOOR = "frozen orthogonal layers (floor)"
PARAMETRIZATION = "torch orthogonal + Adam"

#: Learning-rate grids of the orthogonal weights (4 values each).
ORTH_GRIDS = {
    "POGO-VAdam (ours)": (0.2, 0.4, 0.8, 1.6),
    "pogo-torch VAdam (authors)": (0.2, 0.4, 0.8, 1.6),
    "Landing VAdam": (0.2, 0.4, 0.8, 1.6),
    "geoopt RiemannianAdam": (3e-2, 1e-1, 3e-1, 1.0),
    PARAMETRIZATION: (1e-3, 3e-3, 1e-2, 3e-2),
    FLOOR: (0.0,),
}

METHODS = (
    "POGO-VAdam (ours)",
    "pogo-torch VAdam (authors)",
    "Landing VAdam",
    "geoopt RiemannianAdam",
    FLOOR,
)


def _init(seed: int, n_in: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "w1": random_stiefel(HIDDEN, n_in, generator=g),
        "w2": random_stiefel(HIDDEN, HIDDEN, generator=g),
        "w3": torch.randn(10, HIDDEN, generator=g) / HIDDEN**0.5,
        "b1": torch.zeros(HIDDEN),
        "b2": torch.zeros(HIDDEN),
        "b3": torch.zeros(10),
    }


def _forward(w1, w2, w3, b1, b2, b3, x):
    h = F.relu(x @ w1.mT + b1)
    h = F.relu(h @ w2.mT + b2)
    return h @ w3.mT + b3


class _Trainer:
    """Holds a method's parameters; ``weights()`` gives (w1, w2) in the rows layout."""

    def __init__(self, method: str, init: dict[str, torch.Tensor], lr_orth: float):
        self.method = method
        free = {k: torch.nn.Parameter(init[k].clone()) for k in ("w3", "b1", "b2", "b3")}
        self.free = free
        self.extra_opt = None
        free_group = {"params": list(free.values()), "lr": LR_FREE}
        if method in ("POGO-VAdam (ours)", "Landing VAdam"):
            self.w = [torch.nn.Parameter(init[k].clone()) for k in ("w1", "w2")]
            cls = POGO if method.startswith("POGO") else Landing
            self.opt = cls(
                [{"params": self.w}, {**free_group, "orthogonal": False, "base": "adam"}],
                lr=lr_orth,
                base="vadam",
            )
            self.get = lambda: tuple(self.w)
        elif method == "pogo-torch VAdam (authors)":
            from pogo import POGO as AuthorsPOGO
            from pogo import base

            self.w = [torch.nn.Parameter(init[k].clone()[None]) for k in ("w1", "w2")]
            self.opt = AuthorsPOGO(self.w, base.VectorAdam(), lr_orth)
            self.extra_opt = torch.optim.Adam(free.values(), lr=LR_FREE)
            self.get = lambda: (self.w[0][0], self.w[1][0])
        elif method == "geoopt RiemannianAdam":
            import geoopt

            self.w = [
                geoopt.ManifoldParameter(
                    init[k].mT.contiguous().clone(), manifold=geoopt_manifold(init[k].shape)
                )
                for k in ("w1", "w2")
            ]
            self.opt = geoopt.optim.RiemannianAdam(
                [{"params": self.w, "lr": lr_orth}, free_group], lr=LR_FREE
            )
            self.get = lambda: (self.w[0].mT, self.w[1].mT)
        elif method == PARAMETRIZATION:
            from torch.nn.utils import parametrizations

            self.mods = []
            for k in ("w1", "w2"):
                m = torch.nn.Module()
                m.weight = torch.nn.Parameter(init[k].clone())
                parametrizations.orthogonal(m, "weight")
                with torch.no_grad():
                    m.weight = init[k].clone()
                self.mods.append(m)
            params = [p for m in self.mods for p in m.parameters()]
            self.opt = torch.optim.Adam([{"params": params, "lr": lr_orth}, free_group])
            self.get = lambda: (self.mods[0].weight, self.mods[1].weight)
        elif method == FLOOR:
            fixed = (init["w1"].clone(), init["w2"].clone())
            self.opt = torch.optim.Adam([free_group])
            self.get = lambda: fixed
        else:
            raise ValueError(f"unknown method {method!r}")

    def step(self, x, y) -> float:
        self.opt.zero_grad(set_to_none=True)
        if self.extra_opt is not None:
            self.extra_opt.zero_grad(set_to_none=True)
        w1, w2 = self.get()
        f = self.free
        loss = F.cross_entropy(_forward(w1, w2, f["w3"], f["b1"], f["b2"], f["b3"], x), y)
        loss.backward()
        self.opt.step()
        if self.extra_opt is not None:
            self.extra_opt.step()
        return float(loss.detach())

    @torch.no_grad()
    def accuracy(self, x, y) -> float:
        w1, w2 = self.get()
        f = self.free
        logits = _forward(w1, w2, f["w3"], f["b1"], f["b2"], f["b3"], x)
        return float((logits.argmax(1) == y).float().mean())

    @torch.no_grad()
    def orth_error(self) -> float:
        return max(float(orthogonality_error(w.detach())) for w in self.get())


def _minibatches(rng, n: int, batch: int, epochs: int):
    return [
        idx for _ in range(epochs) for idx in np.array_split(rng.permutation(n), max(1, n // batch))
    ]


def _train(trainers, x, y, steps, stats=None):
    for idx in steps:
        xb, yb = x[idx], y[idx]
        names = list(trainers)
        for m in names:  # interleaved
            t0 = time.perf_counter()
            loss = trainers[m].step(xb, yb)
            if stats is not None:
                stats[m]["time"] += time.perf_counter() - t0
                stats[m]["loss"] = loss
                stats[m]["orth"] = max(stats[m]["orth"], trainers[m].orth_error())


def train_orthogonal_mlp(
    ctx,
    *,
    epochs: int,
    n_train: int,
    n_val: int,
    batch: int,
    methods=METHODS,
    grids=None,
    seed: int = 500,
):
    """Tune each method's orthogonal learning rate on a validation split, then train.

    ``grids`` maps a method to its learning rates (default :data:`ORTH_GRIDS`).

    Returns:
        ``{method: {"lr_orth", "val_accuracy": {lr: acc}, "test_accuracy", "time",
        "orth", "steps"}}``.
    """
    from icml26_core.datasets import load_mnist

    x, y = load_mnist()
    x, y = torch.from_numpy(np.asarray(x)), torch.from_numpy(np.asarray(y)).long()
    rng = ctx.rng(seed)
    order = rng.permutation(len(x))
    test, pool = order[:1000], order[1000 : 1000 + n_train]
    fit, val = pool[: n_train - n_val], pool[n_train - n_val :]
    init = _init(ctx.seed + seed, x.shape[1])
    out = {}
    for m in ctx.progress(methods, f"orthogonal MLP on MNIST: tuning {len(methods)} methods"):
        accs = {}
        for lr in (grids or ORTH_GRIDS)[m]:
            trainer = _Trainer(m, init, lr)
            steps = _minibatches(np.random.default_rng(seed + 1), len(fit), batch, epochs)
            _train({m: trainer}, x[fit], y[fit], steps)
            accs[lr] = trainer.accuracy(x[val], y[val])
        best = max(accs, key=accs.get)
        out[m] = {
            "lr_orth": best,
            "lr_at_grid_edge": len(accs) > 2 and best in (min(accs), max(accs)),
            "val_accuracy": {f"{k:g}": v for k, v in accs.items()},
        }
    trainers = {m: _Trainer(m, init, out[m]["lr_orth"]) for m in methods}
    stats = {m: {"time": 0.0, "orth": 0.0, "loss": float("nan")} for m in methods}
    steps = _minibatches(rng, len(pool), batch, epochs)
    _train(trainers, x[pool], y[pool], ctx.progress(steps, "orthogonal MLP on MNIST"), stats)
    for m, trainer in trainers.items():
        out[m].update(stats[m])
        out[m]["test_accuracy"] = trainer.accuracy(x[test], y[test])
        out[m]["steps"] = len(steps)
    return out


def seconds_per_step(method: str, *, batch: int = 100, reps: int = 3, seed: int = 500) -> float:
    """Median seconds of one training step of ``method`` on one minibatch (a warm step first)."""
    from icml26_core.datasets import load_mnist

    x, y = load_mnist()
    xb = torch.from_numpy(np.asarray(x)[:batch])
    yb = torch.from_numpy(np.asarray(y)[:batch]).long()
    grid = ORTH_GRIDS[method]
    trainer = _Trainer(method, _init(seed, xb.shape[1]), grid[len(grid) // 2])
    trainer.step(xb, yb)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        trainer.step(xb, yb)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))
