"""Hand-designed online trackers, with the learned ones' ``rollout`` interface.

- :class:`OnlineSGD`: ``X_k = X_{k-1} - lr g_k(X_{k-1})``;
- :class:`OnlineAdam`: ``torch.optim.Adam``'s update on the same gradients;
- :class:`PredictionCorrection`: Simonetto et al. (2016) with the extrapolation
  predictor: predict with the extrapolated gradient ``2 g_k - g_{k-1}`` at ``X_{k-1}``,
  then correct with one gradient step on batch k at the prediction (3 gradients a step);
- :class:`KalmanFilter`: the exact filter of a random-walk prior ``x_k = x_{k-1} + w``,
  ``w ~ N(0, q I)``, for least-squares measurements (it knows the noise model);
- :class:`PerStepSolution`: the minimum-norm least-squares solution of batch k alone
  (memoryless; least squares only).
"""

from __future__ import annotations

from typing import Any

import torch
from icml26_core.validation import check_float, check_int

from stochastic_path_follower.problems import LeastSquaresBatch, Scenario

__all__ = ["KalmanFilter", "OnlineAdam", "OnlineSGD", "PerStepSolution", "PredictionCorrection"]


class _Tracker:
    def rollout(
        self,
        scenario: Scenario,
        episodes: int,
        generator: torch.Generator,
        start: int = 0,
        steps: int | None = None,
    ) -> torch.Tensor:
        """Decisions on ``episodes`` streams from step ``start``, shape (steps, B, d).

        Raises:
            ValueError: On ``episodes`` < 1 or ``start``/``steps`` outside the scenario.
        """
        n = len(scenario)
        episodes = check_int("episodes", episodes, low=1)
        start = check_int("start", start, low=0, high=n - 1)
        steps = n - start if steps is None else check_int("steps", steps, low=1, high=n - start)
        x = torch.zeros(episodes, scenario.dim, dtype=getattr(scenario, "dtype", torch.float32))
        state = self.init(x)
        out = []
        for k in range(start, start + steps):
            x, state = self.update(x, state, scenario.sample(k, episodes, generator))
            out.append(x)
        return torch.stack(out)

    def init(self, x: torch.Tensor) -> dict:
        return {}

    def update(self, x: torch.Tensor, state: dict, batch: Any) -> tuple[torch.Tensor, dict]:
        raise NotImplementedError


class OnlineSGD(_Tracker):
    """Constant-step online SGD. ``lr`` > 0."""

    def __init__(self, lr: float) -> None:
        self.lr = check_float("lr", lr, low=0.0, low_inclusive=False)

    def update(self, x, state, batch):
        """One step from decision ``x`` (B, d) on ``batch``; returns the new decision and state."""
        return x - self.lr * batch.grad(x), state


class OnlineAdam(_Tracker):
    """Adam (Kingma and Ba) on the stream of minibatch gradients, bias-corrected."""

    def __init__(
        self, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8
    ) -> None:
        self.lr = check_float("lr", lr, low=0.0, low_inclusive=False)
        self.betas, self.eps = betas, eps

    def init(self, x):
        """The method's state for initial decisions ``x`` (B, d)."""
        return {"m": torch.zeros_like(x), "v": torch.zeros_like(x), "k": 0}

    def update(self, x, state, batch):
        """One step from decision ``x`` (B, d) on ``batch``; returns the new decision and state."""
        b1, b2 = self.betas
        g = batch.grad(x)
        k = state["k"] + 1
        m = b1 * state["m"] + (1 - b1) * g
        v = b2 * state["v"] + (1 - b2) * g * g
        step = self.lr * (m / (1 - b1**k)) / ((v / (1 - b2**k)).sqrt() + self.eps)
        return x - step, {"m": m, "v": v, "k": k}


class PredictionCorrection(_Tracker):
    """Prediction-correction with gradient extrapolation (Simonetto et al. 2016)."""

    def __init__(self, lr: float) -> None:
        self.lr = check_float("lr", lr, low=0.0, low_inclusive=False)

    def init(self, x):
        """The method's state for initial decisions ``x`` (B, d)."""
        return {"prev": None}

    def update(self, x, state, batch):
        """One step from decision ``x`` (B, d) on ``batch``; returns the new decision and state."""
        prev = state["prev"]
        if prev is not None:  # prediction: extrapolated gradient field at the current point
            x = x - self.lr * (2 * batch.grad(x) - prev.grad(x))
        x = x - self.lr * batch.grad(x)  # correction on the newest batch
        return x, {"prev": batch}


class KalmanFilter(_Tracker):
    """Kalman filter, random-walk prior with variance ``q`` per step, noise ``r``.

    Args:
        q: Process noise variance per coordinate, > 0 (fit it on training signals).
        r: Measurement noise variance, > 0.
        p0: Prior variance of ``x_0`` around zero, > 0.
    """

    def __init__(self, q: float, r: float, p0: float = 1.0) -> None:
        self.q = check_float("q", q, low=0.0, low_inclusive=False)
        self.r = check_float("r", r, low=0.0, low_inclusive=False)
        self.p0 = check_float("p0", p0, low=0.0, low_inclusive=False)

    def init(self, x):
        """The method's state for initial decisions ``x`` (B, d)."""
        B, d = x.shape
        return {"P": self.p0 * torch.eye(d, dtype=x.dtype).expand(B, d, d).clone()}

    def update(self, x, state, batch):
        """One step from decision ``x`` (B, d) on ``batch``; returns the new decision and state."""
        if not isinstance(batch, LeastSquaresBatch):
            raise TypeError("KalmanFilter needs least-squares batches")
        A, y = batch.A, batch.y
        d = x.shape[1]
        P = state["P"] + self.q * torch.eye(d, dtype=x.dtype)
        PAt = P @ A.transpose(1, 2)
        S = A @ PAt + self.r * torch.eye(A.shape[1], dtype=x.dtype)
        K = torch.linalg.solve(S, PAt.transpose(1, 2)).transpose(1, 2)
        innov = y - torch.einsum("bmd,bd->bm", A, x)
        x = x + torch.einsum("bdm,bm->bd", K, innov)
        P = P - K @ A @ P
        return x, {"P": 0.5 * (P + P.transpose(1, 2))}


class PerStepSolution(_Tracker):
    """The minimum-norm solution of ``A_k x = y_k`` alone (least squares, no memory)."""

    def update(self, x, state, batch):
        """One step from decision ``x`` (B, d) on ``batch``; returns the new decision and state."""
        if not isinstance(batch, LeastSquaresBatch):
            raise TypeError("PerStepSolution needs least-squares batches")
        return torch.linalg.pinv(batch.A).matmul(batch.y[..., None])[..., 0], state
