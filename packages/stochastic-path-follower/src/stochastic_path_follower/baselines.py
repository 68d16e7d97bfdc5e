"""Hand-designed online trackers, with the learned ones' ``rollout`` interface.

- :class:`OnlineSGD`: ``X_k = X_{k-1} - lr g_k(X_{k-1})``;
- :class:`OnlineAdam`: ``torch.optim.Adam``'s update on the same gradients;
- :class:`PredictionCorrection`: Simonetto et al. (2016) with tvopt's extrapolation
  predictor: correct the prediction on batch k, then predict with one step on the
  extrapolated cost ``2 f_k - f_{k-1}`` (3 gradients a step);
- :class:`TvoptPredictionCorrection`: the same method run by tvopt 0.2.7 itself (the
  reference library; numpy, one stream at a time);
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

__all__ = [
    "KalmanFilter",
    "OnlineAdam",
    "OnlineSGD",
    "PerStepSolution",
    "PredictionCorrection",
    "TvoptPredictionCorrection",
]


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
        x = torch.zeros(
            episodes,
            scenario.dim,
            dtype=getattr(scenario, "dtype", torch.float32),
            device=getattr(scenario, "device", None),
        )
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
    """Prediction-correction with cost extrapolation (Simonetto et al. 2016), in torch.

    The order of tvopt's prediction-correction loop with ``ExtrapolationPrediction``
    (order 2), one gradient step each: at step k the prediction ``P_{k-1}`` made before
    batch k arrived is corrected on batch k, ``X_k = P_{k-1} - lr g_k(P_{k-1})``; then
    the next prediction is one step on the extrapolated cost ``2 f_k - f_{k-1}``,
    ``P_k = X_k - lr (2 g_k(X_k) - g_{k-1}(X_k))`` (on ``f_k`` alone while k < 2, as
    tvopt does). Three minibatch gradients a step. ``lr`` > 0.
    """

    def __init__(self, lr: float) -> None:
        self.lr = check_float("lr", lr, low=0.0, low_inclusive=False)

    def init(self, x):
        """The method's state for initial decisions ``x`` (B, d): the prediction is ``x``."""
        return {"pred": x, "prev": None, "k": 0}

    def update(self, x, state, batch):
        """Correct the stored prediction on ``batch``, then predict; returns (X_k, state)."""
        xp = state["pred"]
        x = xp - self.lr * batch.grad(xp)  # correction on the newest batch
        g = batch.grad(x)
        if state["k"] >= 2:  # prediction on the extrapolated cost 2 f_k - f_{k-1}
            g = 2 * g - state["prev"].grad(x)
        return x, {"pred": x - self.lr * g, "prev": batch, "k": state["k"] + 1}


class TvoptPredictionCorrection(_Tracker):
    """The same prediction-correction run by the reference library, tvopt 0.2.7 (numpy).

    Each stream's minibatch at step k becomes a static ``tvopt.costs.Cost``; the
    prediction is ``tvopt.prediction.ExtrapolationPrediction`` (order 2) over the
    ``tvopt.costs.DiscreteDynamicCost`` of the batches seen so far, and both steps are
    ``tvopt.solvers.gradient`` with one iteration. Decisions are float64 numpy inside,
    returned as tensors of the scenario's dtype. Slow (Python loops, one stream at a
    time): it is the peer of :class:`PredictionCorrection` in the experiment.

    Args:
        lr: Step of the correction and of the prediction, > 0.

    Raises:
        ImportError: If tvopt is not installed (``pip install tvopt``; it is in the
            ``repro`` extra).
    """

    def __init__(self, lr: float) -> None:
        self.lr = check_float("lr", lr, low=0.0, low_inclusive=False)
        try:
            import tvopt  # noqa: F401
        except ImportError as e:  # pragma: no cover - exercised without the extra
            raise ImportError(
                "TvoptPredictionCorrection needs tvopt: pip install tvopt "
                "(or stochastic-path-follower[repro])"
            ) from e

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
        import numpy as np
        from tvopt import costs, prediction, sets, solvers

        n = len(scenario)
        episodes = check_int("episodes", episodes, low=1)
        start = check_int("start", start, low=0, high=n - 1)
        steps = n - start if steps is None else check_int("steps", steps, low=1, high=n - start)
        dtype = getattr(scenario, "dtype", torch.float32)
        device = getattr(scenario, "device", None)
        d = scenario.dim
        dom = sets.R(d, 1)
        # batches in the order every other tracker draws them (the same streams)
        batches = [scenario.sample(k, episodes, generator) for k in range(start, start + steps)]

        class _BatchCost(costs.Cost):  # one stream's minibatch loss, a static tvopt cost
            def __init__(self, batch: Any, b: int) -> None:
                super().__init__(dom)
                self.batch, self.b = batch, b
                self.smooth = 2

            def _grad(self, x: np.ndarray) -> np.ndarray:
                X = torch.zeros(episodes, d, dtype=dtype, device=device)
                X[self.b] = torch.as_tensor(x[:, 0], dtype=dtype, device=device)
                return self.batch.grad(X)[self.b].double().cpu().numpy()[:, None]

            def function(self, x: np.ndarray) -> float:  # pragma: no cover - unused
                raise NotImplementedError

            def gradient(self, x: np.ndarray) -> np.ndarray:
                return self._grad(np.asarray(x, dtype=float).reshape(d, 1))

        out = np.zeros((steps, episodes, d))
        for b in range(episodes):
            dyn = costs.DiscreteDynamicCost([_BatchCost(bt, b) for bt in batches])
            f_hat = prediction.ExtrapolationPrediction(dyn, order=2)
            x_pred = np.zeros((d, 1))
            for k in range(steps):
                x = solvers.gradient({"f": dyn.sample(k)}, self.lr, x_0=x_pred, num_iter=1)
                out[k, b] = x[:, 0]
                f_hat.update(k)  # causal: the prediction uses batches 0..k only
                x_pred = solvers.gradient({"f": f_hat}, self.lr, x_0=x, num_iter=1)
        return torch.as_tensor(out, dtype=dtype, device=device)


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
        eye = torch.eye(d, dtype=x.dtype, device=x.device)
        return {"P": self.p0 * eye.expand(B, d, d).clone()}

    def update(self, x, state, batch):
        """One step from decision ``x`` (B, d) on ``batch``; returns the new decision and state."""
        if not isinstance(batch, LeastSquaresBatch):
            raise TypeError("KalmanFilter needs least-squares batches")
        A, y = batch.A, batch.y
        d = x.shape[1]
        P = state["P"] + self.q * torch.eye(d, dtype=x.dtype, device=x.device)
        PAt = P @ A.transpose(1, 2)
        S = A @ PAt + self.r * torch.eye(A.shape[1], dtype=x.dtype, device=x.device)
        K = torch.linalg.solve(S, PAt.transpose(1, 2)).transpose(1, 2)
        innov = y - torch.einsum("bmd,bd->bm", A, x)
        x = x + torch.einsum("bdm,bm->bd", K, innov)
        P = P - K @ PAt.transpose(1, 2)  # K A P, with A P = (P A^T)^T as P is symmetric
        return x, {"P": 0.5 * (P + P.transpose(1, 2))}


class PerStepSolution(_Tracker):
    """The minimum-norm solution of ``A_k x = y_k`` alone (least squares, no memory).

    ``A_k`` must have full row rank (m <= d Gaussian rows do, almost surely).
    """

    def update(self, x, state, batch):
        """One step from decision ``x`` (B, d) on ``batch``; returns the new decision and state."""
        if not isinstance(batch, LeastSquaresBatch):
            raise TypeError("PerStepSolution needs least-squares batches")
        # A^T (A A^T)^{-1} y: A (B, m, d) has full row rank m < d almost surely, so this
        # is pinv(A) y, from an m x m solve instead of an SVD
        A = batch.A
        z = torch.linalg.solve(A @ A.transpose(1, 2), batch.y.unsqueeze(-1))
        return (A.transpose(1, 2) @ z)[..., 0], state
