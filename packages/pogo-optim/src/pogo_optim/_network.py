"""An MLP with orthogonal hidden layers on MNIST, trained by each method (experiment part 3).

``784 -> 128`` (orthonormal rows) ``-> ReLU -> 128 -> 128`` (orthogonal) ``-> ReLU -> 10``
(free); biases and the head are free parameters. Each method trains the same
initial network on the same minibatches; the free parameters always use Adam
(inside the same optimizer object where the method allows it).
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn.functional as F

from pogo_optim.optimizers import POGO, Landing
from pogo_optim.stiefel import orthogonality_error, random_stiefel

HIDDEN = 128


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

    def __init__(self, method: str, init: dict[str, torch.Tensor], lr_orth: float, lr_free: float):
        self.method = method
        free = {k: torch.nn.Parameter(init[k].clone()) for k in ("w3", "b1", "b2", "b3")}
        self.free = free
        self.param = None
        self.extra_opt = None
        if method in ("POGO-VAdam (ours)", "Landing VAdam"):
            self.w = [torch.nn.Parameter(init[k].clone()) for k in ("w1", "w2")]
            cls = POGO if method.startswith("POGO") else Landing
            self.opt = cls(
                [
                    {"params": self.w},
                    {
                        "params": list(free.values()),
                        "orthogonal": False,
                        "base": "adam",
                        "lr": lr_free,
                    },
                ],
                lr=lr_orth,
                base="vadam",
            )
            self.get = lambda: tuple(self.w)
        elif method == "pogo-torch VAdam (authors)":
            from pogo import POGO as AuthorsPOGO
            from pogo import base

            self.w = [torch.nn.Parameter(init[k].clone()[None]) for k in ("w1", "w2")]
            self.opt = AuthorsPOGO(self.w, base.VectorAdam(), lr_orth)
            self.extra_opt = torch.optim.Adam(free.values(), lr=lr_free)
            self.get = lambda: (self.w[0][0], self.w[1][0])
        elif method == "geoopt RiemannianAdam":
            import geoopt

            self.w = [
                geoopt.ManifoldParameter(init[k].mT.contiguous().clone(), manifold=geoopt.Stiefel())
                for k in ("w1", "w2")
            ]
            self.opt = geoopt.optim.RiemannianAdam([*self.w, *free.values()], lr=lr_free)
            self.get = lambda: (self.w[0].mT, self.w[1].mT)
        elif method == "torch orthogonal + Adam":
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
            self.opt = torch.optim.Adam([*params, *free.values()], lr=lr_free)
            self.get = lambda: (self.mods[0].weight, self.mods[1].weight)
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


METHODS = (
    "POGO-VAdam (ours)",
    "pogo-torch VAdam (authors)",
    "Landing VAdam",
    "geoopt RiemannianAdam",
    "torch orthogonal + Adam",
)


def train_orthogonal_mlp(ctx, *, epochs: int, n_train: int, batch: int, methods=METHODS):
    """Train every method; return {method: metrics} (accuracy, time, orthogonality)."""
    from icml26_core.datasets import load_mnist

    x, y = load_mnist()
    rng = ctx.rng(500)
    order = rng.permutation(len(x))
    tr, te = order[:n_train], order[n_train : n_train + 1000]
    xt, yt = torch.from_numpy(np.asarray(x)[tr]), torch.from_numpy(np.asarray(y)[tr]).long()
    xe, ye = torch.from_numpy(np.asarray(x)[te]), torch.from_numpy(np.asarray(y)[te]).long()
    init = _init(ctx.seed + 500, xt.shape[1])
    trainers = {m: _Trainer(m, init, lr_orth=0.05, lr_free=1e-3) for m in methods}
    stats = {m: {"time": 0.0, "orth": 0.0, "loss": float("nan")} for m in methods}
    steps = [
        idx
        for _ in range(epochs)
        for idx in np.array_split(rng.permutation(n_train), max(1, n_train // batch))
    ]
    for idx in ctx.progress(steps, f"orthogonal MLP on MNIST ({len(methods)} methods)"):
        xb, yb = xt[idx], yt[idx]
        for m, trainer in trainers.items():  # interleaved
            t0 = time.perf_counter()
            stats[m]["loss"] = trainer.step(xb, yb)
            stats[m]["time"] += time.perf_counter() - t0
            stats[m]["orth"] = max(stats[m]["orth"], trainer.orth_error())
    for m, trainer in trainers.items():
        stats[m]["test_accuracy"] = trainer.accuracy(xe, ye)
        stats[m]["steps"] = len(steps)
    return stats
