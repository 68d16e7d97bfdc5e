"""SAG / SAGA / IAG for a batch of B linear-model problems at once, in torch.

All B problems take their step k together: one gather of the sampled rows, one fused
update of the B iterates, so a GPU runs many regularization strengths, label sets or
data sets (of one shape) in the time of one. Each problem has its own index stream, the
same one :func:`sag_saga_iag.solvers.solve` would draw with seed ``seeds[b]``, so the
two agree up to rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from icml26_core.validation import check_choice, check_int

from sag_saga_iag.bounds import METHODS, delay_bound
from sag_saga_iag.sampling import make_sampler


@dataclass
class BatchedResult:
    """Result of :func:`batched_solve`.

    Attributes:
        x: Final iterates, tensor (B, p) (p = d, or d + 1 with the intercept last).
        objective: f_b(x) after each epoch, tensor (n_epochs + 1, B), epoch 0 first.
        step_size: Steps used, tensor (B,).
    """

    x: Any
    objective: Any
    step_size: Any


def batched_solve(
    X: Any,
    y: Any,
    *,
    method: str = "sag",
    loss: str = "logistic",
    alpha: float | Sequence[float] | Any = 0.0,
    step_size: float | Sequence[float] | Any | None = None,
    n_epochs: int = 50,
    sampling: str = "uniform",
    seeds: int | Sequence[int] | None = 0,
    fit_intercept: bool = False,
    device: str = "cpu",
    dtype: Any = None,
) -> BatchedResult:
    """Solve B problems f_b(x) = (1/n) sum_i phi(a_bi^T x, y_bi) + (alpha_b/2)||w||^2 together.

    Args:
        X: Samples, shape (B, n, d), or (n, d) shared by all problems (array or tensor).
        y: Targets, shape (B, n); labels in {-1, +1} for the logistic loss.
        method: ``"sag"``, ``"saga"`` or ``"iag"``.
        loss: ``"logistic"`` or ``"squared"``.
        alpha: L2 coefficient(s) >= 0, scalar or shape (B,).
        step_size: Scalar or (B,) steps > 0; None means scikit-learn's steps for SAG/SAGA
            (1/L_max; 1/(2 L_max + min(2 n alpha, L_max))) and the theory step for IAG,
            per problem.
        n_epochs: Epochs after the initial pass, >= 1.
        sampling: ``"uniform"``, ``"reshuffle"``, ``"cyclic"`` or ``"markov"``.
        seeds: Base seed (problem b uses seeds + b) or one seed per problem.
        fit_intercept: Append an unpenalized intercept.
        device: Torch device string (``"cpu"``, ``"cuda"``, ...).
        dtype: Torch float dtype; float64 by default (float32 is faster on a GPU).

    Returns:
        A :class:`BatchedResult`.

    Raises:
        ValueError: On mismatched shapes, non-finite values, bad labels or parameters.

    Example:
        >>> import numpy as np
        >>> X = np.random.default_rng(0).normal(size=(50, 3))
        >>> y = np.sign(X[:, 0])[None, :].repeat(2, axis=0)
        >>> res = batched_solve(X, y, alpha=[0.1, 1.0], n_epochs=20)
        >>> tuple(res.x.shape)
        (2, 3)
    """
    import torch

    check_choice("method", method, METHODS)
    check_choice("loss", loss, ("logistic", "squared"))
    n_epochs = check_int("n_epochs", n_epochs, low=1)
    dev = torch.device(device)
    dt = torch.float64 if dtype is None else dtype
    A = torch.as_tensor(np.asarray(X) if not torch.is_tensor(X) else X).to(dev, dt)
    Y = torch.as_tensor(np.asarray(y) if not torch.is_tensor(y) else y).to(dev, dt)
    if Y.ndim != 2:
        raise ValueError(f"y must have shape (B, n), got {tuple(Y.shape)}")
    B, n = Y.shape
    if A.ndim == 2:
        shared = True
    elif A.ndim == 3 and A.shape[0] == B:
        shared = False
    else:
        raise ValueError(f"X must have shape (n, d) or (B, n, d) with B={B}, got {tuple(A.shape)}")
    if A.shape[-2] != n or n == 0 or A.shape[-1] == 0:
        raise ValueError(
            f"X must have n={n} rows (matching y) and d >= 1 columns, got {tuple(A.shape)}"
        )
    if not bool(torch.isfinite(A).all()) or not bool(torch.isfinite(Y).all()):
        raise ValueError("X and y must hold finite values, got NaN or inf")
    if loss == "logistic" and not bool((Y.abs() == 1).all()):
        raise ValueError("y must hold labels in {-1, +1} for loss='logistic'")
    if fit_intercept:
        ones = torch.ones(*A.shape[:-1], 1, device=dev, dtype=dt)
        A = torch.cat([A, ones], dim=-1)
    p = A.shape[-1]
    lam = torch.as_tensor(alpha, device=dev, dtype=dt).reshape(-1).expand(B).clone()
    if bool((lam < 0).any()) or not bool(torch.isfinite(lam).all()):
        raise ValueError(f"alpha must be finite and >= 0, got {alpha!r}")
    pen = torch.ones(p, device=dev, dtype=dt)
    if fit_intercept:
        pen[-1] = 0.0

    c = 0.25 if loss == "logistic" else 1.0
    gamma = _steps(
        A, lam, pen, c, method, sampling, n, n_epochs, step_size, shared, fit_intercept, B, dev, dt
    )

    if isinstance(seeds, int | np.integer) or seeds is None:
        base = 0 if seeds is None else int(seeds)
        seed_list = [base + b for b in range(B)]
    else:
        seed_list = [int(s) for s in seeds]
        if len(seed_list) != B:
            raise ValueError(f"seeds must give one seed per problem ({B}), got {len(seed_list)}")
    samplers = [make_sampler(sampling, n, s) for s in seed_list]

    rows = torch.arange(B, device=dev)

    def margins(w: Any) -> Any:
        return A @ w.T if shared else torch.einsum("bnp,bp->bn", A, w)

    def dloss(z: Any, yy: Any) -> Any:
        if loss == "logistic":
            return -yy * torch.sigmoid(-yy * z)
        return z - yy

    def objective(w: Any) -> Any:
        z = margins(w)
        z = z.T if shared else z
        if loss == "logistic":
            data = torch.nn.functional.softplus(-Y * z).mean(dim=1)
        else:
            data = 0.5 * ((z - Y) ** 2).mean(dim=1)
        return data + 0.5 * lam * ((w * pen) ** 2).sum(dim=1)

    w = torch.zeros(B, p, device=dev, dtype=dt)
    z0 = margins(w)
    table = dloss(z0.T if shared else z0, Y)  # (B, n)
    agg = (table @ A) / n if shared else torch.einsum("bn,bnp->bp", table, A) / n
    history = [objective(w)]
    saga = method == "saga"
    for _ in range(n_epochs):
        idx = torch.as_tensor(np.stack([s.epoch() for s in samplers]), device=dev)
        for t in range(n):
            j = idx[:, t]
            a = A[j] if shared else A[rows, j]
            z = (a * w).sum(dim=1)
            g = dloss(z, Y[rows, j])
            diff = g - table[rows, j]
            table[rows, j] = g
            reg = lam[:, None] * (w * pen)
            if saga:
                direction = diff[:, None] * a + agg + reg
                agg = agg + (diff / n)[:, None] * a
            else:
                agg = agg + (diff / n)[:, None] * a
                direction = agg + reg
            w = w - gamma[:, None] * direction
        agg = (table @ A) / n if shared else torch.einsum("bn,bnp->bp", table, A) / n
        history.append(objective(w))
    return BatchedResult(x=w, objective=torch.stack(history), step_size=gamma)


def _steps(
    A: Any,
    lam: Any,
    pen: Any,
    c: float,
    method: str,
    sampling: str,
    n: int,
    n_epochs: int,
    step_size: Any,
    shared: bool,
    fit_intercept: bool,
    B: int,
    dev: Any,
    dt: Any,
) -> Any:
    import torch

    if step_size is not None:
        gamma = torch.as_tensor(step_size, device=dev, dtype=dt).reshape(-1).expand(B).clone()
        if not bool((gamma > 0).all()) or not bool(torch.isfinite(gamma).all()):
            raise ValueError(f"step_size must be finite and > 0, got {step_size!r}")
        return gamma
    row_sq = (A * A).sum(dim=-1)
    row_sq = row_sq.expand(B, n) if shared else row_sq
    L_i = c * row_sq + lam[:, None]
    L_max, L_bar = L_i.max(dim=1).values, L_i.mean(dim=1)
    if method == "sag":
        return 1.0 / L_max
    gram = A.T @ A / n if shared else torch.einsum("bnp,bnq->bpq", A, A) / n
    if method == "saga":
        # mu as LinearModelProblem.smoothness() defines it
        if c == 0.25:
            mu = torch.zeros_like(lam) if fit_intercept else lam
        else:
            H = c * gram + lam[:, None, None] * torch.diag(pen)
            mu = torch.linalg.eigvalsh(H)[..., 0].clamp_min(0.0)
        return 1.0 / (2.0 * L_max + torch.minimum(2.0 * n * mu, L_max))
    top = torch.linalg.eigvalsh(gram)[..., -1]
    L = c * top + lam
    tau = delay_bound(sampling, n, method="iag", horizon=n * n_epochs)
    return 2.0 / (L + torch.sqrt(L * L + 8.0 * L_bar * L_bar * float(tau) ** 2))


__all__ = ["BatchedResult", "batched_solve"]
