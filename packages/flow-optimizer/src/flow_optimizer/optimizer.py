"""FlowOptimizer: a population moved by a learned, coordinate-wise velocity field.

Our reading of the abstract (papers/flow-optimizer.md); the details are our design.
A population ``X`` (``N`` candidates in ``R^d``) moves by Euler steps

    X_{k+1} = clip(X_k + dt * v_theta(X_k, t_k, context_k)),  t_k = k / K,  dt = 1 / K,

where the context is each candidate's objective value (as its rank in the population),
its gradient, and per-coordinate population statistics (mean, std, best candidate).
``v_theta`` is *coordinate-wise*: one small network maps the features of coordinate
``j`` of candidate ``i`` plus mean-pooled summaries (over candidates for coordinate
``j``, and over everything) to that coordinate's velocity, so the same field runs at
any ``d`` and is equivariant to permutations of candidates and of coordinates.

Training (:meth:`FlowOptimizer.fit_flow_matching`, then :meth:`FlowOptimizer.fine_tune`)
uses objective values and gradients only, never solutions:

1. Simulation-free flow matching: from a source population ``X_r``, an improved target
   ``X_{r+1}`` takes, for each candidate, the best of itself and ``M`` Gaussian
   proposals around it (scale: the population's per-coordinate std times a factor drawn
   log-uniform in [0.05, 1]); targets become the next sources, giving ``K`` rounds.
   The field regresses the straight-path velocity ``(X_{r+1} - X_r) / dt`` at
   ``x_tau = (1 - tau) X_r + tau X_{r+1}``, ``t = (r + tau) / K``.
2. Unrolled fine-tuning: ``K`` Euler steps from a uniform population, loss the mean
   over candidates of ``log(f(x_K) - lower_bound + eps)`` (or ``f`` standardized by the
   starting population when no lower bound is known), by backpropagation through the
   unrolled steps; the value and gradient features are treated as inputs (not
   differentiated), so no second derivatives are taken.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_float, check_int
from torch import nn

from flow_optimizer.problems import Problem

__all__ = ["N_FEATURES", "FlowOptimizer", "OptResult", "VelocityField", "population_features"]

N_FEATURES = 7
"""Per-coordinate features: z, best offset, scaled gradient, rank, log std, t, |z|."""


def population_features(
    X: torch.Tensor,
    F: torch.Tensor,
    G: torch.Tensor,
    t: float | torch.Tensor,
    width: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-coordinate features of a population, and its per-coordinate scale.

    Args:
        X: Population, ``(..., N, d)``.
        F: Objective values, ``(..., N)`` (only their ranks are used).
        G: Gradients, ``(..., N, d)`` (zeros when the problem has none).
        t: Flow time in [0, 1].
        width: Box width ``upper - lower``, ``(d,)``.

    Returns:
        ``(features, scale)``: features ``(..., N, d, N_FEATURES)`` and the per-coordinate
        population std ``(..., 1, d)`` (floored at ``1e-8 * width``) that the field's
        output is measured in.
    """
    N = X.shape[-2]
    mean = X.mean(-2, keepdim=True)
    scale = X.std(-2, keepdim=True, unbiased=False) + 1e-8 * width
    z = (X - mean) / scale
    best = torch.gather(
        X, -2, F.argmin(-1, keepdim=True)[..., None].expand(*X.shape[:-2], 1, X.shape[-1])
    )
    b = (best - X) / scale
    gs = G * scale
    gs = gs / (gs.pow(2).mean((-2, -1), keepdim=True).sqrt() + 1e-12)
    rank = F.argsort(-1).argsort(-1).to(X.dtype) / max(N - 1, 1) - 0.5
    rank = rank[..., None].expand_as(X)
    logs = torch.log(scale / width).expand_as(X) / 5.0
    tt = torch.as_tensor(t, dtype=X.dtype, device=X.device).expand_as(X)
    feats = torch.stack([z, b, gs, rank, logs, tt, z.abs()], -1)
    return feats, scale


class VelocityField(nn.Module):
    """Coordinate-wise velocity network with mean-pooled population summaries.

    ``u_ij = head([phi(h_ij), mean_i phi(h_ij), mean_ij phi(h_ij)])`` where ``h_ij`` are
    the :func:`population_features` of coordinate ``j`` of candidate ``i``; the velocity
    is ``v_ij = scale_j * u_ij / dt_train`` (``scale_j``: the population's std of
    coordinate ``j``), so one step moves a candidate by ``u`` population stds. The last
    layer starts at zero: an untrained field is the no-op step.

    Args:
        hidden: Width of the hidden layers (default 32).

    Example:
        >>> field = VelocityField(hidden=16)
        >>> h = torch.zeros(4, 3, N_FEATURES)  # 4 candidates, d = 3
        >>> field(h).shape
        torch.Size([4, 3])
    """

    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        hidden = check_int("hidden", hidden, low=1)
        self.hidden = hidden
        self.phi = nn.Sequential(
            nn.Linear(N_FEATURES, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU()
        )
        self.head = nn.Sequential(nn.Linear(3 * hidden, hidden), nn.GELU(), nn.Linear(hidden, 1))
        nn.init.zeros_(self.head[-1].weight)
        nn.init.zeros_(self.head[-1].bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """Map features ``(..., N, d, N_FEATURES)`` to step sizes ``u`` ``(..., N, d)``."""
        e = self.phi(h)
        per_coord = e.mean(-3, keepdim=True).expand_as(e)
        overall = e.mean((-3, -2), keepdim=True).expand_as(e)
        return self.head(torch.cat([e, per_coord, overall], -1)).squeeze(-1)


@dataclass
class OptResult:
    """What :meth:`FlowOptimizer.minimize` returns.

    Attributes:
        x: Best candidate found, float64 array ``(d,)``.
        f: Its objective value.
        history: Best value so far after each evaluation round (``n_steps + 1`` entries).
        evaluations: Objective evaluations used (``N * (n_steps + 1)``; one value-and-
            gradient call counts as one).
        n_steps: Euler steps taken.
    """

    x: np.ndarray
    f: float
    history: list[float] = field(default_factory=list)
    evaluations: int = 0
    n_steps: int = 0


def _evaluate(problem: Problem, X: torch.Tensor, use_grad: bool) -> tuple[torch.Tensor, ...]:
    if use_grad:
        F, G = problem.value_and_grad(X)
    else:
        with torch.no_grad():
            F = problem.f(X)
        G = torch.zeros_like(X)
    bad = ~torch.isfinite(F)
    if bool(bad.any()):
        i = int(torch.nonzero(bad)[0])
        raise ValueError(
            f"problem.f returned a non-finite value ({float(F[i])}) at candidate index {i}"
        )
    return F, torch.nan_to_num(G)


def _check_problem(problem: Any) -> None:
    missing = [a for a in ("f", "dim", "lower", "upper") if not hasattr(problem, a)]
    if missing:
        raise TypeError(
            "problem must be a flow_optimizer.problems.Problem (or have f, dim, lower, "
            f"upper), got {type(problem).__name__} without {', '.join(missing)}"
        )


def _bounds(problem: Problem, dtype: Any, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    _check_problem(problem)
    if problem.lower is None or problem.upper is None:
        raise ValueError(
            f"problem {getattr(problem, 'name', problem)!r} has no bounds (lower/upper is "
            "None); FlowOptimizer needs them for the starting population"
        )
    return problem.lower.to(dtype=dtype, device=device), problem.upper.to(
        dtype=dtype, device=device
    )


def _meta_train(
    net: nn.Module,
    unrolled_loss: Callable[[Problem, torch.Generator], torch.Tensor],
    problem_sampler: Any,
    *,
    iterations: Any,
    instances_per_iteration: Any,
    lr: Any,
    seed: int,
    callback: Callable[[int, float], None] | None,
) -> list[float]:
    """Adam on ``net`` over the mean unrolled loss of fresh instances (clip norm 1).

    The meta-training loop shared by :class:`FlowOptimizer` and the LSTM baseline, so
    both learn under the same optimizer, clipping and instance draws.
    """
    iterations = check_int("iterations", iterations, low=1)
    B = check_int("instances_per_iteration", instances_per_iteration, low=1)
    lr = check_float("lr", lr, low=0.0, low_inclusive=False)
    _check_sampler(problem_sampler)
    rng = np.random.default_rng(seed)
    g = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    losses: list[float] = []
    for it in range(iterations):
        loss = sum(unrolled_loss(problem_sampler(rng), g) for _ in range(B)) / B
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        if callback is not None:
            callback(it, losses[-1])
    return losses


def _check_sampler(problem_sampler: Any) -> None:
    if not callable(problem_sampler):
        raise TypeError(
            "problem_sampler must be a callable rng -> Problem (e.g. "
            f"lambda rng: fam.sample_instance(rng, 4)), got {type(problem_sampler).__name__}"
        )


class FlowOptimizer:
    """A learned population optimizer: a :class:`VelocityField` unrolled as K Euler steps.

    Args:
        field: The velocity network (a fresh :class:`VelocityField` if None).
        n_candidates: Population size ``N`` (>= 2).
        n_steps: Euler steps ``K`` the field is trained for (>= 1).
        use_gradients: Feed the objective's gradient to the field (else zeros).
        device: Torch device of the field and the populations.
        dtype: Floating dtype of the populations (the objective is evaluated in it).

    Raises:
        ValueError: If ``n_candidates < 2`` or ``n_steps < 1``.
        TypeError: If a count is not an integer, ``dtype`` is not a floating
            ``torch.dtype`` or ``field`` is not an ``nn.Module``.

    Example:
        >>> import numpy as np
        >>> from flow_optimizer.problems import Rastrigin
        >>> opt = FlowOptimizer(n_candidates=8, n_steps=4)
        >>> res = opt.minimize(Rastrigin().sample_instance(np.random.default_rng(0), 3), 40)
        >>> res.evaluations, len(res.history)
        (40, 5)

    References:
        FlowOptimizer (ICML 2026), abstract in ``shared/papers/flow-optimizer.md``.
    """

    def __init__(
        self,
        field: VelocityField | None = None,
        n_candidates: int = 32,
        n_steps: int = 19,
        *,
        use_gradients: bool = True,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self.n_candidates = check_int("n_candidates", n_candidates, low=2)
        self.n_steps = check_int("n_steps", n_steps, low=1)
        if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise TypeError(
                f"dtype must be a floating torch.dtype (e.g. torch.float64), got {dtype!r}"
            )
        if field is not None and not isinstance(field, nn.Module):
            raise TypeError(
                f"field must be a VelocityField (a torch nn.Module), got {type(field).__name__}"
            )
        self.use_gradients = bool(use_gradients)
        self.device = torch.device(device)
        self.dtype = dtype
        self.field = (field if field is not None else VelocityField()).to(self.device, dtype)

    # --- the unrolled iteration -------------------------------------------------------
    def _step(
        self,
        problem: Problem,
        X: torch.Tensor,
        F: torch.Tensor,
        G: torch.Tensor,
        t: float,
        dt: float,
        lo: torch.Tensor,
        hi: torch.Tensor,
    ) -> torch.Tensor:
        h, scale = population_features(X, F, G, t, hi - lo)
        u = self.field(h)
        v = scale * u * self.n_steps  # velocity; the field's step is u stds per 1/K
        return torch.minimum(torch.maximum(X + dt * v, lo), hi)

    def _start(self, problem: Problem, generator: torch.Generator) -> torch.Tensor:
        _bounds(problem, self.dtype, self.device)
        return problem.sample_uniform(self.n_candidates, generator, self.dtype).to(self.device)

    def minimize(
        self, problem: Problem, budget: int, *, seed: int = 0, x0: torch.Tensor | None = None
    ) -> OptResult:
        """Run the flow on ``problem`` within ``budget`` objective evaluations.

        The run takes ``n = budget // N - 1`` Euler steps (``t_k = k / n``, ``dt = 1 / n``)
        and evaluates the population ``n + 1`` times.

        Args:
            problem: The instance (bounded).
            budget: Objective evaluations allowed, >= ``2 N``.
            seed: Seed of the uniform starting population.
            x0: Optional starting population ``(N, d)`` instead of a uniform draw.

        Returns:
            The :class:`OptResult` (best point, value, history, evaluations used).

        Raises:
            ValueError: If ``budget < 2 N``, ``seed < 0``, the problem has no bounds,
                ``x0`` has the wrong shape, or ``problem.f`` returns NaN/inf (the message
                names the candidate index).
            TypeError: If ``budget`` or ``seed`` is not an integer, or ``problem`` lacks
                ``f``/``dim``/``lower``/``upper``.
        """
        N = self.n_candidates
        budget = check_int("budget", budget, low=1)
        if budget < 2 * N:
            raise ValueError(
                f"budget must allow one population step (>= 2 * n_candidates = {2 * N}), "
                f"got {budget}"
            )
        seed = check_int("seed", seed, low=0)
        n = budget // N - 1
        lo, hi = _bounds(problem, self.dtype, self.device)
        if x0 is None:
            g = torch.Generator().manual_seed(seed)
            X = self._start(problem, g)
        else:
            X = torch.as_tensor(x0, dtype=self.dtype, device=self.device)
            if X.shape != (N, problem.dim):
                raise ValueError(f"x0 must have shape {(N, problem.dim)}, got {tuple(X.shape)}")
        best_f, best_x, hist = float("inf"), X[0], []
        with torch.no_grad():
            for k in range(n + 1):
                F, G = _evaluate(problem, X, self.use_gradients)
                i = int(F.argmin())
                if float(F[i]) < best_f:
                    best_f, best_x = float(F[i]), X[i].clone()
                hist.append(best_f)
                if k < n:
                    X = self._step(problem, X, F, G, k / n, 1.0 / n, lo, hi)
        return OptResult(
            x=best_x.double().cpu().numpy(),
            f=best_f,
            history=hist,
            evaluations=N * (n + 1),
            n_steps=n,
        )

    # --- stage 1 ----------------------------------------------------------------------
    def _targets(
        self, problem: Problem, X: torch.Tensor, F: torch.Tensor, n_proposals: int, g: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Best of each candidate and ``M`` Gaussian proposals around it (clipped)."""
        lo, hi = _bounds(problem, self.dtype, self.device)
        N, d = X.shape
        scale = X.std(0, keepdim=True, unbiased=False) + 1e-8 * (hi - lo)
        # drawn on the CPU with the CPU generator, then moved: the same draws on any device
        sig = torch.exp(
            torch.empty(N, n_proposals, 1, dtype=X.dtype).uniform_(
                float(np.log(0.05)), 0.0, generator=g
            )
        ).to(X.device)
        eps = torch.randn(N, n_proposals, d, generator=g, dtype=X.dtype).to(X.device)
        P = torch.minimum(torch.maximum(X[:, None] + sig * scale * eps, lo), hi)
        with torch.no_grad():
            FP = problem.f(P.reshape(-1, d)).reshape(N, n_proposals)
        FP = torch.nan_to_num(FP, nan=float("inf"))
        j = FP.argmin(1)
        better = FP[torch.arange(N), j] < F
        X1 = torch.where(better[:, None], P[torch.arange(N), j], X)
        F1 = torch.where(better, FP[torch.arange(N), j], F)
        return X1, F1

    def fit_flow_matching(
        self,
        problem_sampler: Callable[[np.random.Generator], Problem],
        *,
        iterations: int = 60,
        instances_per_iteration: int = 4,
        n_proposals: int = 8,
        lr: float = 3e-3,
        seed: int = 0,
        callback: Callable[[int, float], None] | None = None,
    ) -> list[float]:
        """Stage 1: regress the field on straight-path velocities to sampled targets.

        Args:
            problem_sampler: ``rng -> Problem`` drawing a training instance.
            iterations: Optimizer steps (each on fresh chains of ``n_steps`` rounds).
            instances_per_iteration: Instances (one chain each) per step.
            n_proposals: Gaussian proposals ``M`` per candidate per round.
            lr: Adam learning rate.
            seed: Seed of instance draws, populations and proposals.
            callback: Called as ``callback(iteration, loss)``.

        Returns:
            The loss of each iteration (Huber loss in population-std units).

        Raises:
            ValueError: On a non-positive count or learning rate.
            TypeError: If ``problem_sampler`` is not callable or draws a non-problem.
        """
        iterations = check_int("iterations", iterations, low=1)
        B = check_int("instances_per_iteration", instances_per_iteration, low=1)
        M = check_int("n_proposals", n_proposals, low=1)
        lr = check_float("lr", lr, low=0.0, low_inclusive=False)
        _check_sampler(problem_sampler)
        rng = np.random.default_rng(seed)
        g = torch.Generator().manual_seed(int(seed))
        opt = torch.optim.Adam(self.field.parameters(), lr=lr)
        K = self.n_steps
        losses = []
        for it in range(iterations):
            feats, targets = [], []
            for _ in range(B):
                problem = problem_sampler(rng)
                lo, hi = _bounds(problem, self.dtype, self.device)
                X = self._start(problem, g)
                F, _ = _evaluate(problem, X, False)
                for r in range(K):
                    X1, F1 = self._targets(problem, X, F, M, g)
                    tau = float(torch.rand((), generator=g))
                    Xt = (1 - tau) * X + tau * X1
                    Ft, Gt = _evaluate(problem, Xt, self.use_gradients)
                    h, scale = population_features(Xt, Ft, Gt, (r + tau) / K, hi - lo)
                    feats.append(h)
                    targets.append((X1 - X) / scale)  # displacement in stds per step
                    X, F = X1, F1
            h = torch.stack(feats)
            y = torch.stack(targets).clamp(-10.0, 10.0)
            loss = nn.functional.smooth_l1_loss(self.field(h), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            if callback is not None:
                callback(it, losses[-1])
        return losses

    # --- stage 2 ----------------------------------------------------------------------
    def _unrolled_loss(self, problem: Problem, g: torch.Generator) -> torch.Tensor:
        lo, hi = _bounds(problem, self.dtype, self.device)
        X = self._start(problem, g)
        K = self.n_steps
        F0 = None
        for k in range(K):
            F, G = _evaluate(problem, X.detach(), self.use_gradients)
            if F0 is None:
                F0 = F
            X = self._step(problem, X, F, G, k / K, 1.0 / K, lo, hi)
        FK = problem.f(X)
        if problem.lower_bound is not None:
            return torch.log(FK - problem.lower_bound + 1e-6).mean()
        return ((FK - F0.median()) / (F0.std() + 1e-12)).mean()

    def fine_tune(
        self,
        problem_sampler: Callable[[np.random.Generator], Problem],
        *,
        iterations: int = 40,
        instances_per_iteration: int = 4,
        lr: float = 1e-3,
        seed: int = 1,
        callback: Callable[[int, float], None] | None = None,
    ) -> list[float]:
        """Stage 2: unroll ``n_steps`` Euler steps and minimize the final objective.

        Args:
            problem_sampler: ``rng -> Problem`` drawing a training instance.
            iterations: Adam steps.
            instances_per_iteration: Instances averaged per step.
            lr: Adam learning rate.
            seed: Seed of instance draws and starting populations.
            callback: Called as ``callback(iteration, loss)``.

        Returns:
            The loss of each iteration.

        Raises:
            ValueError: On a non-positive count or learning rate.
            TypeError: If ``problem_sampler`` is not callable or draws a non-problem.
        """
        return _meta_train(
            self.field,
            self._unrolled_loss,
            problem_sampler,
            iterations=iterations,
            instances_per_iteration=instances_per_iteration,
            lr=lr,
            seed=seed,
            callback=callback,
        )

    # --- persistence ------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the field's weights and configuration to ``path`` (``torch.save``).

        Stored: the weights, ``hidden``, ``n_candidates``, ``n_steps``, ``use_gradients``
        and ``dtype``; the device is chosen again at :meth:`load`.
        """
        torch.save(
            {
                "state_dict": self.field.state_dict(),
                "hidden": self.field.hidden,
                "n_candidates": self.n_candidates,
                "n_steps": self.n_steps,
                "use_gradients": self.use_gradients,
                "dtype": str(self.dtype).removeprefix("torch."),
            },
            path,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, device: str = "cpu") -> FlowOptimizer:
        """Rebuild a :class:`FlowOptimizer` written by :meth:`save`."""
        d = torch.load(path, map_location=device, weights_only=True)
        field = VelocityField(hidden=d["hidden"])
        field.load_state_dict(d["state_dict"])
        return cls(
            field,
            d["n_candidates"],
            d["n_steps"],
            use_gradients=d["use_gradients"],
            device=device,
            dtype=getattr(torch, d.get("dtype", "float32")),
        )
