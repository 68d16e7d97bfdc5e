"""The coordinate-wise LSTM learned optimizer of Andrychowicz et al. (2016), a baseline.

"Learning to learn by gradient descent by gradient descent" (NeurIPS 2016): one small
LSTM, shared by every coordinate, reads that coordinate's (preprocessed) gradient and
its own hidden state and outputs the coordinate's update,

    x_{t+1} = x_t + g_t,   [g_t, h_{t+1}] = m(preprocess(grad f(x_t)), h_t; phi),

and ``phi`` is trained by backpropagation through the unrolled optimization on the loss
``sum_t f(x_t)`` over training instances, with the gradients fed to ``m`` treated as
inputs (no second derivatives, as in the paper). Paper settings kept: two LSTM layers of
20 units, the gradient preprocessing of its Appendix A (``p = 10``), an output scale of
0.1, Adam on ``phi``.

Our adaptations, so that it runs on the same problems and budget as
:class:`~flow_optimizer.FlowOptimizer`:

- it runs ``n_candidates`` independent starts drawn uniformly in the box (the paper
  optimizes one point); one value-and-gradient call per start and step counts as one
  evaluation, as for multi-start Adam;
- gradients enter in box-width units (``grad * (upper - lower)``) and the update is
  ``0.1 * (upper - lower) * output``, clipped to the box;
- the loss is the mean over steps ``t = 1..K`` and candidates of
  ``log(f(x_t) - lower_bound + 1e-6)`` where the family has a lower bound, else ``f``
  standardized by the starting population (the same scales as FlowOptimizer's stage 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_float, check_int
from torch import nn

from flow_optimizer.optimizer import OptResult, _bounds, _evaluate, _meta_train
from flow_optimizer.problems import Problem

__all__ = ["LSTMOptimizer", "preprocess_gradient"]


def preprocess_gradient(g: torch.Tensor, p: float = 10.0) -> torch.Tensor:
    """Andrychowicz et al. (2016), Appendix A: gradients to two scale-free inputs.

    ``(log|g| / p, sign(g))`` if ``|g| >= exp(-p)``, else ``(-1, exp(p) g)``.

    Args:
        g: Gradients, any shape ``S``.
        p: The preprocessing constant (> 0; 10 in the paper).

    Returns:
        Tensor of shape ``S + (2,)``, the dtype of ``g``.
    """
    a = g.abs()
    big = a >= math.exp(-p)
    first = torch.where(big, torch.log(a.clamp_min(math.exp(-p))) / p, -torch.ones_like(g))
    second = torch.where(big, torch.sign(g), math.exp(p) * g)
    return torch.stack([first, second], -1)


class _CoordinateLSTM(nn.Module):
    """Two-layer LSTM over coordinates (a batch of ``B`` scalars), linear output."""

    def __init__(self, hidden: int, layers: int) -> None:
        super().__init__()
        self.hidden, self.layers = hidden, layers
        self.lstm = nn.LSTM(input_size=2, hidden_size=hidden, num_layers=layers)
        self.out = nn.Linear(hidden, 1)

    def forward(
        self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """``x`` ``(B, 2)`` -> update ``(B,)`` and the new state (each ``(layers, B, hidden)``)."""
        y, state = self.lstm(x[None], state)
        return self.out(y[0]).squeeze(-1), state


class LSTMOptimizer:
    """Coordinate-wise LSTM learned optimizer (Andrychowicz et al., 2016), multi-start.

    Args:
        n_candidates: Independent starts ``N`` run in parallel (>= 1).
        n_steps: Unrolled steps ``K`` in training (>= 1).
        hidden: LSTM width (20 in the paper).
        layers: LSTM layers (2 in the paper).
        out_scale: Update scale in box widths (0.1 in the paper, there in parameter units).
        preprocess: The gradient preprocessing constant ``p`` (10 in the paper).
        device: Torch device of the network and the populations.
        dtype: Floating dtype of the populations and the network.

    Raises:
        ValueError: If a count is below 1 or ``out_scale``/``preprocess`` is not positive.
        TypeError: If ``dtype`` is not a floating ``torch.dtype``.

    Example:
        >>> import numpy as np
        >>> from flow_optimizer.problems import Rosenbrock
        >>> lstm = LSTMOptimizer(n_candidates=4, n_steps=5)
        >>> p = Rosenbrock().sample_instance(np.random.default_rng(0), 3)
        >>> res = lstm.minimize(p, budget=24)
        >>> res.evaluations, len(res.history), res.x.shape
        (24, 6, (3,))

    References:
        M. Andrychowicz, M. Denil, S. Gomez, M. W. Hoffman, D. Pfau, T. Schaul,
        B. Shillingford, N. de Freitas. Learning to learn by gradient descent by gradient
        descent. NeurIPS 2016.
    """

    def __init__(
        self,
        n_candidates: int = 32,
        n_steps: int = 19,
        *,
        hidden: int = 20,
        layers: int = 2,
        out_scale: float = 0.1,
        preprocess: float = 10.0,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self.n_candidates = check_int("n_candidates", n_candidates, low=1)
        self.n_steps = check_int("n_steps", n_steps, low=1)
        hidden = check_int("hidden", hidden, low=1)
        layers = check_int("layers", layers, low=1)
        self.out_scale = check_float("out_scale", out_scale, low=0.0, low_inclusive=False)
        self.preprocess = check_float("preprocess", preprocess, low=0.0, low_inclusive=False)
        if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise TypeError(
                f"dtype must be a floating torch.dtype (e.g. torch.float64), got {dtype!r}"
            )
        self.device = torch.device(device)
        self.dtype = dtype
        self.net = _CoordinateLSTM(hidden, layers).to(self.device, dtype)

    def _start(self, problem: Problem, g: torch.Generator) -> torch.Tensor:
        return problem.sample_uniform(self.n_candidates, g, self.dtype).to(self.device)

    def _step(
        self,
        X: torch.Tensor,
        G: torch.Tensor,
        state: Any,
        lo: torch.Tensor,
        hi: torch.Tensor,
    ) -> tuple[torch.Tensor, Any]:
        width = hi - lo
        inp = preprocess_gradient((G * width).reshape(-1), self.preprocess)
        u, state = self.net(inp, state)
        X = X + self.out_scale * width * u.reshape(X.shape)
        return torch.minimum(torch.maximum(X, lo), hi), state

    def minimize(self, problem: Problem, budget: int, *, seed: int = 0) -> OptResult:
        """Run ``budget // N - 1`` LSTM steps from ``N`` uniform starts.

        The population is evaluated ``budget // N`` times (value and gradient); the
        result is the best point evaluated.

        Args:
            problem: The instance (bounded).
            budget: Evaluations in all, >= ``2 N``.
            seed: Seed of the starts.

        Returns:
            The :class:`~flow_optimizer.OptResult` (best point as a float64 array
            ``(d,)``, its value, the best value after each evaluation round, evaluations
            used ``N * (budget // N)``).

        Raises:
            ValueError: If ``budget < 2 N``, ``seed < 0``, the problem has no bounds or
                ``problem.f`` returns NaN/inf (the message names the candidate index).
        """
        N = self.n_candidates
        budget = check_int("budget", budget, low=1)
        if budget < 2 * N:
            raise ValueError(
                f"budget must allow one step (>= 2 * n_candidates = {2 * N}), got {budget}"
            )
        seed = check_int("seed", seed, low=0)
        n = budget // N - 1
        lo, hi = _bounds(problem, self.dtype, self.device)
        X = self._start(problem, torch.Generator().manual_seed(seed))
        best_f, best_x, hist, state = float("inf"), X[0], [], None
        with torch.no_grad():
            for k in range(n + 1):
                F, G = _evaluate(problem, X, True)
                i = int(F.argmin())
                if float(F[i]) < best_f:
                    best_f, best_x = float(F[i]), X[i].clone()
                hist.append(best_f)
                if k < n:
                    X, state = self._step(X, G, state, lo, hi)
        return OptResult(
            x=best_x.double().cpu().numpy(),
            f=best_f,
            history=hist,
            evaluations=N * (n + 1),
            n_steps=n,
        )

    def _unrolled_loss(self, problem: Problem, g: torch.Generator) -> torch.Tensor:
        lo, hi = _bounds(problem, self.dtype, self.device)
        X = self._start(problem, g)
        F, G = _evaluate(problem, X, True)
        F0, state, terms = F, None, []
        for k in range(self.n_steps):
            X, state = self._step(X, G, state, lo, hi)
            FX = problem.f(X)  # differentiable in phi through X
            if problem.lower_bound is not None:
                terms.append(torch.log(FX - problem.lower_bound + 1e-6).mean())
            else:
                terms.append(((FX - F0.median()) / (F0.std() + 1e-12)).mean())
            if k + 1 < self.n_steps:
                F, G = _evaluate(problem, X.detach(), True)  # an input: no 2nd derivatives
        return torch.stack(terms).mean()

    def fit(
        self,
        problem_sampler: Callable[[np.random.Generator], Problem],
        *,
        iterations: int = 40,
        instances_per_iteration: int = 4,
        lr: float = 3e-3,
        seed: int = 0,
        callback: Callable[[int, float], None] | None = None,
    ) -> list[float]:
        """Meta-train the LSTM through ``n_steps`` unrolled steps on sampled instances.

        Args:
            problem_sampler: ``rng -> Problem`` drawing a training instance.
            iterations: Adam steps on the LSTM's weights.
            instances_per_iteration: Instances averaged per step.
            lr: Adam learning rate.
            seed: Seed of instance draws and starting populations.
            callback: Called as ``callback(iteration, loss)``.

        Returns:
            The loss of each iteration (mean over steps of the log-objective, see the
            module docstring).

        Raises:
            ValueError: On a non-positive count or learning rate.
            TypeError: If ``problem_sampler`` is not callable.
        """
        return _meta_train(
            self.net,
            self._unrolled_loss,
            problem_sampler,
            iterations=iterations,
            instances_per_iteration=instances_per_iteration,
            lr=lr,
            seed=seed,
            callback=callback,
        )
