"""Problem classes for FlowOptimizer: batched torch objectives with bounds.

A :class:`Problem` is one instance: ``f(X)`` maps a population ``X`` of shape
``(N, d)`` to ``(N,)`` objective values (differentiable torch ops, so the gradient comes
from autograd unless a subclass overrides :meth:`Problem.value_and_grad`), with box
bounds ``lower``/``upper`` of shape ``(d,)``. A *family* (:class:`ProblemFamily`)
draws instances with ``sample_instance(rng, dim)``; FlowOptimizer trains on draws of a
family and is tested on draws with other seeds.

Families: shifted and rotated Rastrigin, Ackley, Rosenbrock and Levy (shift
U[-2, 2]^d, a Haar-random rotation), planar n-link arm inverse kinematics with joint
limits (reachable targets), and a multi-product newsvendor with a capacity (sample
average over demand scenarios; its optimum from an LP, for evaluation only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_int

__all__ = [
    "FAMILIES",
    "Ackley",
    "ArmIK",
    "Levy",
    "Newsvendor",
    "Problem",
    "ProblemFamily",
    "Rastrigin",
    "Rosenbrock",
    "family",
]


class Problem:
    """One objective instance: ``f(X) -> (N,)``, box bounds, optional known optimum value.

    Attributes:
        dim: Dimension ``d``.
        lower: Lower bounds, float64 tensor ``(d,)``; None if the problem has none.
        upper: Upper bounds, float64 tensor ``(d,)``; None if the problem has none.
        optimum: The optimal value where known (for reporting gaps; never read in
            training), else None.
        lower_bound: A value ``f`` never goes below (0 for the nonnegative families), or
            None. Stage-2 fine-tuning uses it to put the loss on a log scale.
    """

    dim: int
    lower: torch.Tensor | None
    upper: torch.Tensor | None
    optimum: float | None = None
    lower_bound: float | None = None
    name: str = "problem"

    def f(self, X: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        """Objective values of each row of ``X`` (shape ``(N, d)``), shape ``(N,)``."""
        raise NotImplementedError

    def value_and_grad(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Values ``(N,)`` and gradients ``(N, d)`` at each row of ``X`` (autograd), detached."""
        with torch.enable_grad():
            Xg = X.detach().requires_grad_(True)
            F = self.f(Xg)
            (G,) = torch.autograd.grad(F.sum(), Xg)
        return F.detach(), G.detach()

    def sample_uniform(self, n: int, generator: torch.Generator, dtype: Any) -> torch.Tensor:
        """``n`` points uniform in the bounds, shape ``(n, d)``.

        Raises:
            ValueError: If the problem has no bounds.
        """
        if self.lower is None or self.upper is None:
            raise ValueError(
                f"problem {self.name!r} has no bounds (lower/upper is None); the sampler "
                "needs them to draw a starting population"
            )
        u = torch.rand(n, self.dim, generator=generator, dtype=torch.float64)
        lo, hi = self.lower, self.upper
        return (lo + u * (hi - lo)).to(dtype)


def _check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}"
        )
    return rng


def _rotation(rng: np.random.Generator, d: int) -> np.ndarray:
    """A Haar-random orthogonal matrix (QR of a Gaussian with the sign fix)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


class _ShiftedRotated(Problem):
    """``f(x) = base(R (x - s)) (+ 1 for Rosenbrock)``: optimum value 0 at ``x = s``."""

    def __init__(self, base: str, shift: np.ndarray, rot: np.ndarray, bound: float) -> None:
        d = len(shift)
        self.name, self.dim = base, d
        self.shift = torch.as_tensor(shift, dtype=torch.float64)
        self.rot = torch.as_tensor(rot, dtype=torch.float64)
        self.lower = torch.full((d,), -bound, dtype=torch.float64)
        self.upper = torch.full((d,), bound, dtype=torch.float64)
        self.optimum = 0.0
        self.lower_bound = 0.0

    def f(self, X: torch.Tensor) -> torch.Tensor:
        Z = (X - self.shift.to(X)) @ self.rot.to(X).T
        return BASE_FUNCTIONS[self.name](Z)


def rastrigin(Z: torch.Tensor) -> torch.Tensor:
    """Rastrigin ``10 d + sum(z^2 - 10 cos(2 pi z))``, rows of ``Z`` ``(N, d)`` -> ``(N,)``."""
    return 10.0 * Z.shape[-1] + (Z**2 - 10.0 * torch.cos(2 * math.pi * Z)).sum(-1)


def ackley(Z: torch.Tensor) -> torch.Tensor:
    """Ackley (a=20, b=0.2, c=2 pi), minimum 0 at z = 0."""
    d = Z.shape[-1]
    r = torch.sqrt((Z**2).sum(-1) / d + 1e-30)
    c = torch.cos(2 * math.pi * Z).sum(-1) / d
    return -20.0 * torch.exp(-0.2 * r) - torch.exp(c) + 20.0 + math.e


def rosenbrock(Z: torch.Tensor) -> torch.Tensor:
    """Rosenbrock of ``z + 1`` (so the minimum 0 is at z = 0)."""
    Y = Z + 1.0
    return (100.0 * (Y[..., 1:] - Y[..., :-1] ** 2) ** 2 + (1.0 - Y[..., :-1]) ** 2).sum(-1)


def levy(Z: torch.Tensor) -> torch.Tensor:
    """Levy of ``z + 1`` (``w = 1 + z / 4``), minimum 0 at z = 0."""
    W = 1.0 + Z / 4.0
    a = torch.sin(math.pi * W[..., 0]) ** 2
    mid = ((W[..., :-1] - 1) ** 2 * (1 + 10 * torch.sin(math.pi * W[..., :-1] + 1) ** 2)).sum(-1)
    last = (W[..., -1] - 1) ** 2 * (1 + torch.sin(2 * math.pi * W[..., -1]) ** 2)
    return a + mid + last


BASE_FUNCTIONS = {"rastrigin": rastrigin, "ackley": ackley, "rosenbrock": rosenbrock, "levy": levy}


class ProblemFamily:
    """A class of problems: ``sample_instance(rng, dim)`` draws one :class:`Problem`."""

    name = "family"

    def sample_instance(self, rng: np.random.Generator, dim: int) -> Problem:  # pragma: no cover
        """Draw one instance of dimension ``dim`` with the numpy generator ``rng``."""
        raise NotImplementedError


@dataclass(frozen=True)
class _Benchmark(ProblemFamily):
    base: str
    bound: float = 5.0
    max_shift: float = 2.0

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.base

    def sample_instance(self, rng: np.random.Generator, dim: int) -> Problem:
        """A shifted (U[-2, 2]^d) and rotated instance in the box [-5, 5]^d.

        Raises:
            ValueError: If ``dim < 1`` (``dim < 2`` for Rosenbrock).
            TypeError: If ``rng`` is not a ``np.random.Generator``.
        """
        dim = check_int("dim", dim, low=2 if self.base == "rosenbrock" else 1)
        rng = _check_rng(rng)
        shift = rng.uniform(-self.max_shift, self.max_shift, dim)
        return _ShiftedRotated(self.base, shift, _rotation(rng, dim), self.bound)


def Rastrigin() -> ProblemFamily:
    """Shifted, rotated Rastrigin in [-5, 5]^d (optimum 0)."""
    return _Benchmark("rastrigin")


def Ackley() -> ProblemFamily:
    """Shifted, rotated Ackley in [-5, 5]^d (optimum 0)."""
    return _Benchmark("ackley")


def Rosenbrock() -> ProblemFamily:
    """Shifted, rotated Rosenbrock in [-5, 5]^d (optimum 0)."""
    return _Benchmark("rosenbrock")


def Levy() -> ProblemFamily:
    """Shifted, rotated Levy in [-5, 5]^d (optimum 0)."""
    return _Benchmark("levy")


class _ArmInstance(Problem):
    def __init__(self, target: np.ndarray, lengths: np.ndarray, limit: float) -> None:
        d = len(lengths)
        self.name, self.dim = "arm-ik", d
        self.target = torch.as_tensor(target, dtype=torch.float64)
        self.lengths = torch.as_tensor(lengths, dtype=torch.float64)
        self.lower = torch.full((d,), -limit, dtype=torch.float64)
        self.upper = torch.full((d,), limit, dtype=torch.float64)
        self.optimum = 0.0  # the target is reachable by construction
        self.lower_bound = 0.0

    def end_effector(self, X: torch.Tensor) -> torch.Tensor:
        """Planar end-effector position ``(N, 2)`` of joint angles ``X`` ``(N, d)`` (radians)."""
        phi = torch.cumsum(X, dim=-1)
        L = self.lengths.to(X)
        return torch.stack([(L * torch.cos(phi)).sum(-1), (L * torch.sin(phi)).sum(-1)], -1)

    def f(self, X: torch.Tensor) -> torch.Tensor:
        return ((self.end_effector(X) - self.target.to(X)) ** 2).sum(-1)


@dataclass(frozen=True)
class ArmIK(ProblemFamily):
    """Planar ``d``-link arm inverse kinematics: squared distance of the tip to a target.

    Links of equal length ``1 / d`` (reach 1), relative joint angles in
    ``[-limit, limit]`` radians. The target is the tip at angles drawn uniformly in the
    limits, so it is reachable and the optimum value is 0 (``optimum``).

    Args:
        limit: Joint limit in radians (default 2.0).
    """

    limit: float = 2.0
    name = "arm-ik"

    def sample_instance(self, rng: np.random.Generator, dim: int) -> Problem:
        """Draw a reachable target for a ``dim``-link arm.

        Raises:
            ValueError: If ``dim < 1``.
            TypeError: If ``rng`` is not a ``np.random.Generator``.
        """
        dim = check_int("dim", dim, low=1)
        rng = _check_rng(rng)
        lengths = np.full(dim, 1.0 / dim)
        theta = rng.uniform(-self.limit, self.limit, dim)
        phi = np.cumsum(theta)
        target = np.array([(lengths * np.cos(phi)).sum(), (lengths * np.sin(phi)).sum()])
        return _ArmInstance(target, lengths, self.limit)


class _NewsvendorInstance(Problem):
    def __init__(
        self, price: np.ndarray, cost: np.ndarray, demand: np.ndarray, capacity: float
    ) -> None:
        d = len(price)
        self.name, self.dim = "newsvendor", d
        self.price = torch.as_tensor(price, dtype=torch.float64)
        self.cost = torch.as_tensor(cost, dtype=torch.float64)
        self.demand = torch.as_tensor(demand, dtype=torch.float64)  # (S, d)
        self.capacity = float(capacity)
        self.penalty = 2.0 * float(price.max())  # exact penalty: > any capacity multiplier
        self.lower = torch.zeros(d, dtype=torch.float64)
        self.upper = torch.full((d,), 3.0, dtype=torch.float64)
        self.lower_bound = None
        self._optimum: float | None = None

    @property
    def optimum(self) -> float:  # type: ignore[override]
        """LP optimum of the sample-average problem, solved on first access (reporting only)."""
        if self._optimum is None:
            self._optimum = _newsvendor_lp(
                self.price.numpy(), self.cost.numpy(), self.demand.numpy(), self.capacity, 3.0
            )
        return self._optimum

    def f(self, X: torch.Tensor) -> torch.Tensor:
        D = self.demand.to(X)
        sold = torch.minimum(X[:, None, :], D[None]).mean(1)  # (N, d) expected sales
        profit = (sold * self.price.to(X)).sum(-1) - (X * self.cost.to(X)).sum(-1)
        excess = torch.relu(X.sum(-1) - self.capacity)
        return -profit + self.penalty * excess


def _newsvendor_lp(
    price: np.ndarray, cost: np.ndarray, demand: np.ndarray, capacity: float, upper: float
) -> float:
    """Optimal negative expected profit of the sample-average newsvendor (HiGHS LP)."""
    try:
        from scipy.optimize import linprog
    except ImportError:  # pragma: no cover - scipy is in the repro extra
        return float("nan")
    S, d = demand.shape
    # variables: x (d), y (S*d) with y_sj <= x_j, y_sj <= D_sj; minimise c.x - mean p.y
    c = np.concatenate([cost, -np.tile(price, S) / S])
    rows = []
    for s in range(S):
        for j in range(d):
            r = np.zeros(d + S * d)
            r[d + s * d + j] = 1.0
            r[j] = -1.0
            rows.append(r)
    cap = np.concatenate([np.ones(d), np.zeros(S * d)])
    A = np.vstack([np.array(rows), cap])
    b = np.concatenate([np.zeros(S * d), [capacity]])
    bounds = [(0.0, upper)] * d + [(0.0, float(v)) for v in demand.ravel()]
    res = linprog(c, A_ub=A, b_ub=b, bounds=bounds, method="highs")
    return float(res.fun) if res.status == 0 else float("nan")


@dataclass(frozen=True)
class Newsvendor(ProblemFamily):
    """Multi-product newsvendor with a shared capacity, as ``f = -expected profit + penalty``.

    Order quantities ``x`` in ``[0, 3]^d``; demand ``S`` scenarios, lognormal with
    means U[0.5, 1.5] and log-sd 0.5; price U[5, 10]; unit cost a U[0.3, 0.7] fraction
    of the price; capacity 60% of the total mean demand; exact penalty
    ``2 max(price) * max(0, sum x - capacity)``. ``optimum`` is the LP optimum of the
    same sample-average problem (reporting only).

    Args:
        scenarios: Number of demand scenarios ``S`` (default 50).
    """

    scenarios: int = 50
    name = "newsvendor"

    def sample_instance(self, rng: np.random.Generator, dim: int) -> Problem:
        """Draw prices, costs and demand scenarios for ``dim`` products.

        Raises:
            ValueError: If ``dim < 1``.
            TypeError: If ``rng`` is not a ``np.random.Generator``.
        """
        dim = check_int("dim", dim, low=1)
        rng = _check_rng(rng)
        mean = rng.uniform(0.5, 1.5, dim)
        demand = mean * np.exp(0.5 * rng.standard_normal((self.scenarios, dim)) - 0.125)
        price = rng.uniform(5.0, 10.0, dim)
        cost = price * rng.uniform(0.3, 0.7, dim)
        return _NewsvendorInstance(price, cost, demand, 0.6 * float(mean.sum()))


FAMILIES = {
    "rastrigin": Rastrigin,
    "ackley": Ackley,
    "rosenbrock": Rosenbrock,
    "levy": Levy,
    "arm-ik": ArmIK,
    "newsvendor": Newsvendor,
}


def family(name: str) -> ProblemFamily:
    """The family called ``name`` (one of :data:`FAMILIES`).

    Raises:
        ValueError: If ``name`` is unknown.
    """
    if name not in FAMILIES:
        raise ValueError(f"family must be one of {sorted(FAMILIES)}, got {name!r}")
    return FAMILIES[name]()
