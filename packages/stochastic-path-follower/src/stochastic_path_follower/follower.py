"""The Stochastic Path Follower (SPF): a learned, coordinate-wise continuation law.

Our design from the abstract (the paper's details are not public). Differentiating the
optimality condition ``E[grad l(X_t; xi_t) | F_t] = 0`` along the path gives the
continuation law ``dX = -H_t^{-1} (d_t G dt + dM_t)``: the decision moves against the
drift of the gradient field, corrected by the Hessian. SPF learns this law: a small
network ``N_phi``, applied to every coordinate with the same weights, maps the
coordinate's features

- ``grad``: the current minibatch gradient at the current decision, ``g_k(X_{k-1})``;
- ``prev_grad``: the previous step's gradient, ``g_{k-1}(X_{k-2})``;
- ``hvp``: the Hessian-vector product along the last step, as the secant
  ``g_k(X_{k-1}) - g_k(X_{k-2})`` on the current minibatch (exact for quadratics);
- ``time``: ``exp(-(t_k - t_0) / time_scale)``, the same for every coordinate;
- ``step`` (optional): the last update ``X_{k-1} - X_{k-2}``;

to the update ``X_k = X_{k-1} - eta g + r N_phi(features / r)``, where ``r`` is the
running root-mean-square of the gradient (one number per episode, so the law is
permutation-equivariant and does not depend on ``d``) and ``eta`` a learned step.
The combination ``g_k - hvp - g_{k-1}`` is a one-step estimate of ``d_t G dt + dM``,
so the features span the continuation law's right-hand side.

It is trained offline on simulated drift scenarios (:meth:`fit`) to minimise
``sum_k [f_k(X_k) - f_k(x*_k)] + residual_weight ||E[grad l_k(X_k) | F_k]||^2``, the
squared residual estimated without bias as ``<g^1, g^2>`` from two independent
minibatches at ``X_k``; both terms are divided by their value at the zero decision.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch
from icml26_core.validation import check_choice, check_float, check_int
from torch import nn

from stochastic_path_follower.problems import Minibatch, Scenario

__all__ = ["FEATURES", "LSTMOptimizer", "StochasticPathFollower"]

FEATURES = ("grad", "prev_grad", "hvp", "time", "step")
_EPS = 1e-12


def _check_features(features: Sequence[str]) -> tuple[str, ...]:
    if isinstance(features, str):
        raise TypeError(f"features must be a sequence of names, got the string {features!r}")
    feats = tuple(features)
    if not feats or "grad" not in feats:
        raise ValueError(f"features must include 'grad', got {feats}")
    for f in feats:
        check_choice("features", f, FEATURES)
    if len(set(feats)) != len(feats):
        raise ValueError(f"features must not repeat, got {feats}")
    return feats


class _LearnedTracker(nn.Module):
    """Shared machinery: state, rollout, offline training, tracking, save/load."""

    uses_hvp = False
    config: dict[str, Any]

    def init_state(self, x0: torch.Tensor, t0: float) -> dict[str, Any]:
        return {"x": x0, "x_prev": x0, "g_prev": torch.zeros_like(x0), "s": None, "t0": t0, "k": 0}

    def _scale(self, state: dict[str, Any], g: torch.Tensor) -> torch.Tensor:
        ms = (g.detach() ** 2).mean(-1, keepdim=True)
        s = (
            ms
            if state["s"] is None
            else (1 - self.scale_decay) * state["s"] + self.scale_decay * ms
        )
        state["s"] = s
        # r itself, without an epsilon: a zero gradient scale gives a zero learned step
        # (the features divide by r + eps)
        return s.sqrt()

    def step(self, state: dict[str, Any], batch: Minibatch, t: float) -> dict[str, Any]:
        """One causal update from the minibatch ``batch`` observed at time ``t``.

        With the ``hvp`` feature, the two gradients ``g_k(X_{k-1})`` and
        ``g_k(X_{k-2})`` come from one ``batch.grad_pair`` call when the batch has
        one (the problems here do: one batched product instead of two), else from
        two ``grad`` calls.
        """
        x = state["x"]
        hv = None
        if self.uses_hvp and state["k"] > 0:
            pair = getattr(batch, "grad_pair", None)
            if pair is not None:
                g, g_old = pair(x, state["x_prev"])
            else:
                g, g_old = batch.grad(x), batch.grad(state["x_prev"])
            hv = g - g_old
        else:
            g = batch.grad(x)
        return self.step_from_grads(state, g, hv, t)

    def _device(self) -> torch.device:
        return next(self.parameters()).device

    def step_from_grads(
        self, state: dict[str, Any], g: torch.Tensor, hv: torch.Tensor | None, t: float
    ) -> dict[str, Any]:
        raise NotImplementedError

    def rollout(
        self,
        scenario: Scenario,
        episodes: int,
        generator: torch.Generator,
        start: int = 0,
        steps: int | None = None,
        x0: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Decisions on ``episodes`` streams of ``scenario`` from step ``start``.

        Args:
            scenario: A :class:`~stochastic_path_follower.Scenario` of K steps.
            episodes: Independent streams ``B``, >= 1.
            generator: The minibatches' random generator.
            start: First step, in ``[0, K)``.
            steps: Steps to run, in ``[1, K - start]``; default all that remain.
            x0: Initial decisions (B, d); default zeros in the follower's dtype.

        Returns:
            ``X_k`` for the steps run, shape (steps, B, d), with the autograd graph
            unless called under ``torch.no_grad()``.

        Raises:
            TypeError: If the scenario's ``dtype`` differs from the follower's.
            ValueError: On out-of-range ``episodes``, ``start`` or ``steps``, or an
                ``x0`` that is not a (B, d) tensor.
        """
        self._check_scenario_dtype(scenario)
        n = len(scenario)
        episodes = check_int("episodes", episodes, low=1)
        start = check_int("start", start, low=0, high=n - 1)
        steps = n - start if steps is None else check_int("steps", steps, low=1, high=n - start)
        if x0 is None:
            x = torch.zeros(episodes, scenario.dim, dtype=self._dtype(), device=self._device())
        elif not isinstance(x0, torch.Tensor) or tuple(x0.shape) != (episodes, scenario.dim):
            raise ValueError(
                f"x0 must be a tensor of shape (episodes, d) = ({episodes}, {scenario.dim}), "
                f"got {tuple(x0.shape) if isinstance(x0, torch.Tensor) else type(x0).__name__}"
            )
        else:
            x = x0
        state = self.init_state(x, float(scenario.times[start]))
        out = []
        for k in range(start, start + steps):
            state = self.step(
                state, scenario.sample(k, episodes, generator), float(scenario.times[k])
            )
            out.append(state["x"])
        return torch.stack(out)

    def _dtype(self) -> torch.dtype:
        return next(self.parameters()).dtype

    def _check_scenario_dtype(self, scenario: Any) -> None:
        dt = getattr(scenario, "dtype", None)
        if isinstance(dt, torch.dtype) and dt != self._dtype():
            raise TypeError(
                f"the scenario is {dt} but the follower computes in {self._dtype()}: "
                f"cast the follower with .to({dt}) or build the scenario with "
                f"dtype={self._dtype()}"
            )

    def fit(
        self,
        scenarios: Scenario | Iterable[Scenario],
        epochs: int = 50,
        *,
        episodes: int = 8,
        unroll: int = 64,
        lr: float = 3e-3,
        seed: int = 0,
        callback: Any = None,
    ) -> _LearnedTracker:
        """Train offline on simulated drift scenarios (truncated backpropagation in time).

        Each epoch visits every scenario once: ``episodes`` independent streams over a
        random window of ``unroll`` steps, from the zero decision; the loss is the
        normalised dynamic regret plus ``residual_weight`` times the normalised
        two-batch residual estimate (see the module docstring). Adam, gradients
        clipped to norm 1.

        Args:
            scenarios: One scenario or several (any dimensions).
            epochs: Passes over the scenarios, >= 1.
            episodes: Streams per window, >= 1.
            unroll: Steps per window, >= 2 (shorter scenarios use their length).
            lr: Adam's learning rate, > 0.
            seed: Seed of the windows and minibatches.
            callback: Called as ``callback(epoch, loss)`` after each epoch.

        Returns:
            ``self``, trained; ``self.history_`` holds the mean loss per epoch.

        Raises:
            TypeError: If ``scenarios`` holds an object that is not a Scenario or one
                whose ``dtype`` differs from the follower's, or an argument has the
                wrong type.
            ValueError: On an empty scenario list or out-of-range arguments.
        """
        try:
            scen = [scenarios] if isinstance(scenarios, Scenario) else list(scenarios)
        except TypeError:
            raise TypeError(
                "scenarios must be a Scenario or an iterable of them, "
                f"got {type(scenarios).__name__}"
            ) from None
        if not scen:
            raise ValueError("scenarios must not be empty")
        for s in scen:
            if not isinstance(s, Scenario):
                raise TypeError(
                    f"scenarios must follow the Scenario protocol, got {type(s).__name__}"
                )
        for s in scen:
            self._check_scenario_dtype(s)
        epochs = check_int("epochs", epochs, low=1)
        episodes = check_int("episodes", episodes, low=1)
        unroll = check_int("unroll", unroll, low=2)
        lr = check_float("lr", lr, low=0.0, low_inclusive=False)
        seed = check_int("seed", seed)
        dev = self._device()
        gen = torch.Generator(device=dev).manual_seed(seed)
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        paths = [s.reference_path().to(device=dev, dtype=self._dtype()) for s in scen]
        self.train()
        history = []
        for epoch in range(epochs):
            total = 0.0
            for s, path in zip(scen, paths, strict=True):
                T = min(unroll, len(s))
                start = int(torch.randint(0, len(s) - T + 1, (1,), generator=gen, device=dev))
                loss = self._window_loss(s, path, start, T, episodes, gen)
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(self.parameters(), 1.0)
                opt.step()
                total += float(loss.detach())
            history.append(total / len(scen))
            if callback is not None:
                callback(epoch, history[-1])
        self.eval()
        self.history_ = history
        return self

    def _window_loss(
        self,
        s: Scenario,
        path: torch.Tensor,
        start: int,
        T: int,
        episodes: int,
        gen: torch.Generator,
    ) -> torch.Tensor:
        dt = self._dtype()
        zero = torch.zeros(episodes, s.dim, dtype=dt, device=self._device())
        state = self.init_state(zero, float(s.times[start]))
        regret, resid, reg0, res0 = [], [], [], []
        lam = float(self.config.get("residual_weight", 0.0))
        for k in range(start, start + T):
            state = self.step(state, s.sample(k, episodes, gen), float(s.times[k]))
            x = state["x"]
            fstar = s.population_loss(k, path[k : k + 1])
            regret.append(s.population_loss(k, x) - fstar)
            with torch.no_grad():
                reg0.append(s.population_loss(k, zero) - fstar)
            if lam > 0:  # two independent minibatches, drawn (and differentiated) as one
                b12 = s.sample(k, 2 * episodes, gen)
                g1, g2 = b12.grad(x.repeat(2, 1)).chunk(2)
                resid.append((g1 * g2).sum(-1))
                with torch.no_grad():
                    z1, z2 = b12.grad(zero.repeat(2, 1)).chunk(2)
                    res0.append((z1 * z2).sum(-1))
        norm = torch.stack(reg0).mean(0).clamp_min(_EPS)
        loss = (torch.stack(regret).mean(0) / norm).mean()
        if lam > 0:
            norm_r = torch.stack(res0).mean(0).abs().clamp_min(_EPS)
            loss = loss + lam * (torch.stack(resid).mean(0) / norm_r).mean()
        return loss

    @torch.no_grad()
    def track(
        self, stream: Iterable[tuple[float, Minibatch]], x0: torch.Tensor
    ) -> Iterator[torch.Tensor]:
        """Follow a stream causally: yield ``X_k`` right after batch k, before batch k+1.

        Args:
            stream: ``(t_k, batch_k)`` pairs with strictly increasing ``t_k``; each
                batch's ``grad`` takes decisions of shape (B, d).
            x0: The initial decision, shape (d,) or (B, d), finite.

        Yields:
            ``X_k``, a new tensor of the shape of ``x0``, in the follower's dtype
            (float32 unless the follower was cast).

        Raises:
            TypeError: If ``x0`` is not a tensor, ``stream`` is not iterable, or it
                yields something other than ``(t, batch)`` pairs.
            ValueError: On a non-finite ``x0``, a wrong shape, or times that do not increase.
        """
        if not isinstance(x0, torch.Tensor):
            raise TypeError(f"x0 must be a torch.Tensor, got {type(x0).__name__}")
        if x0.ndim not in (1, 2):
            raise ValueError(f"x0 must have shape (d,) or (B, d), got {tuple(x0.shape)}")
        try:
            stream = iter(stream)
        except TypeError:
            raise TypeError(
                f"stream must be an iterable of (t, batch) pairs, got {type(stream).__name__}"
            ) from None
        if not torch.isfinite(x0).all():
            raise ValueError("x0 contains NaN or inf")
        flat = x0.ndim == 1
        x = x0.detach().to(self._dtype())
        x = x[None] if flat else x
        state = None
        last_t = -math.inf
        for item in stream:
            try:
                t, batch = item
                t = float(t)
            except (TypeError, ValueError):
                raise TypeError(
                    f"stream must yield (t, batch) pairs with a float t, got {type(item).__name__}"
                    f" {item!r:.60}"
                ) from None
            if not isinstance(batch, Minibatch):
                raise TypeError(
                    f"stream must yield (t, batch) pairs whose batch has a grad(x) method, "
                    f"got {type(batch).__name__}"
                )
            if not t > last_t:
                raise ValueError(f"stream times must increase strictly, got {t} after {last_t}")
            last_t = t
            if state is None:
                try:
                    g0 = batch.grad(x)
                except (RuntimeError, TypeError, ValueError) as e:
                    raise ValueError(
                        f"x0 of shape {tuple(x.shape)} does not fit the batches: {e} "
                        f"(the follower computes in {self._dtype()}; batches of another "
                        "dtype need the follower cast with .to(dtype))"
                    ) from e
                if g0.shape != x.shape:
                    raise ValueError(
                        f"batch gradients have shape {tuple(g0.shape)}, x0 {tuple(x.shape)}"
                    )
                state = self.init_state(x, t)
            state = self.step(state, batch, t)
            xk = state["x"]
            if xk.shape != x.shape:
                raise ValueError(
                    f"batch gradients have shape {tuple(xk.shape)}, x0 {tuple(x.shape)}"
                )
            yield xk[0].clone() if flat else xk.clone()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the configuration and weights (``torch.save``; loads with weights_only)."""
        torch.save(
            {"class": type(self).__name__, "config": self.config, "state": self.state_dict()}, path
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Any:
        """Read a follower written by :meth:`save`."""
        blob = torch.load(path, weights_only=True)
        if blob.get("class") != cls.__name__:
            raise ValueError(f"{path} holds a {blob.get('class')}, not a {cls.__name__}")
        obj = cls(**blob["config"])
        obj.load_state_dict(blob["state"])
        obj.eval()
        return obj


class StochasticPathFollower(_LearnedTracker):
    """SPF: a permutation-equivariant learned path follower (see the module docstring).

    Args:
        width: Hidden width of the coordinate-wise MLP ``N_phi`` (two hidden layers), >= 1.
        features: Names from ``("grad", "prev_grad", "hvp", "time", "step")``; must
            include ``"grad"``.
        residual_weight: Weight ``lambda`` of the squared-residual term, >= 0.
        time_scale: Time constant of the ``time`` feature, > 0 (units of ``t``).
        scale_decay: Rate of the running gradient scale ``r``, in (0, 1].
        eta: Initial value of the learned SGD step ``eta``, > 0.
        seed: Seed of the initial weights.

    Shapes: decisions and gradients are (B, d), float32 by default; any d.

    Raises:
        TypeError: If ``width`` or ``seed`` is not an integer, a float argument is not
            a number, or ``features`` is a string.
        ValueError: If ``width`` < 1, a float argument is out of its range or not
            finite, or ``features`` lacks ``"grad"``, repeats or names an unknown one.

    Example:
        >>> import torch
        >>> from stochastic_path_follower import DriftingLeastSquares, StochasticPathFollower
        >>> spf = StochasticPathFollower(width=8)
        >>> prob = DriftingLeastSquares(torch.ones(20, 16), m=4, noise=0.0)
        >>> xs = spf.rollout(prob, episodes=2, generator=torch.Generator().manual_seed(0))
        >>> tuple(xs.shape)
        (20, 2, 16)
    """

    def __init__(
        self,
        width: int = 64,
        features: Sequence[str] = ("grad", "prev_grad", "hvp", "time"),
        residual_weight: float = 0.5,
        time_scale: float = 16.0,
        scale_decay: float = 0.1,
        eta: float = 0.3,
        seed: int = 0,
    ) -> None:
        super().__init__()
        width = check_int("width", width, low=1)
        feats = _check_features(features)
        residual_weight = check_float("residual_weight", residual_weight, low=0.0)
        time_scale = check_float("time_scale", time_scale, low=0.0, low_inclusive=False)
        scale_decay = check_float(
            "scale_decay", scale_decay, low=0.0, high=1.0, low_inclusive=False
        )
        eta = check_float("eta", eta, low=0.0, low_inclusive=False)
        seed = check_int("seed", seed)
        self.config = {
            "width": width,
            "features": list(feats),
            "residual_weight": residual_weight,
            "time_scale": time_scale,
            "scale_decay": scale_decay,
            "eta": eta,
            "seed": int(seed),
        }
        self.features = feats
        self.uses_hvp = "hvp" in feats
        self.time_scale = time_scale
        self.scale_decay = scale_decay
        g = torch.Generator().manual_seed(int(seed))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
            self.net = nn.Sequential(
                nn.Linear(len(feats), width),
                nn.Tanh(),
                nn.Linear(width, width),
                nn.Tanh(),
                nn.Linear(width, 1),
            )
        with torch.no_grad():
            self.net[-1].weight.mul_(0.1)
            self.net[-1].bias.zero_()
        self.log_eta = nn.Parameter(torch.tensor(math.log(eta)))

    def coordinate_features(
        self,
        state: dict[str, Any],
        g: torch.Tensor,
        hv: torch.Tensor | None,
        t: float,
        r: torch.Tensor,
    ) -> torch.Tensor:
        """The per-coordinate features, shape (B, d, n_features), divided by ``r``.

        The vector features are stacked first and divided by ``r`` in one operation;
        the time feature (not divided) is filled in afterwards.
        """
        cols = []
        for f in self.features:
            if f == "grad":
                cols.append(g)
            elif f == "prev_grad":
                cols.append(state["g_prev"])
            elif f == "hvp":
                cols.append(hv if hv is not None else torch.zeros_like(g))
            elif f == "step":
                cols.append(state["x"] - state["x_prev"])
            else:  # time: a placeholder, overwritten below
                cols.append(g)
        feats = torch.stack(cols, -1) / (r.unsqueeze(-1) + _EPS)
        if "time" in self.features:
            u = math.exp(-(t - state["t0"]) / self.time_scale)
            feats[..., self.features.index("time")] = u
        return feats

    def step_from_grads(
        self, state: dict[str, Any], g: torch.Tensor, hv: torch.Tensor | None, t: float
    ) -> dict[str, Any]:
        """One update from the gradient ``g`` (B, d) and secant ``hv`` at time ``t``."""
        if not torch.isfinite(g).all():
            raise ValueError("the minibatch gradient contains NaN or inf")
        r = self._scale(state, g)
        feats = self.coordinate_features(state, g, hv, t, r)
        out = self.net(feats).squeeze(-1)
        delta = r * out - self.log_eta.exp() * g
        return {
            "x": state["x"] + delta,
            "delta": delta,
            "x_prev": state["x"],
            "g_prev": g,
            "s": state["s"],
            "t0": state["t0"],
            "k": state["k"] + 1,
        }


class LSTMOptimizer(_LearnedTracker):
    """The coordinate-wise LSTM optimizer (Andrychowicz et al. 2016), as a tracker.

    Two LSTM layers of ``hidden`` units run on every coordinate with shared weights;
    the input is the gradient divided by the running scale ``r`` (the same
    normalisation as SPF), the update ``-eta g + r * Linear(h)``. Trained by the same
    :meth:`fit` on the summed loss (``residual_weight = 0``).

    Args:
        hidden: LSTM units per layer, >= 1.
        scale_decay: Rate of the running gradient scale, in (0, 1].
        eta: Initial learned SGD step, > 0.
        seed: Seed of the initial weights.

    Raises:
        TypeError: If ``hidden`` or ``seed`` is not an integer or a float argument is
            not a number.
        ValueError: If ``hidden`` < 1 or a float argument is out of its range.
    """

    def __init__(
        self, hidden: int = 20, scale_decay: float = 0.1, eta: float = 0.3, seed: int = 0
    ) -> None:
        super().__init__()
        hidden = check_int("hidden", hidden, low=1)
        scale_decay = check_float(
            "scale_decay", scale_decay, low=0.0, high=1.0, low_inclusive=False
        )
        eta = check_float("eta", eta, low=0.0, low_inclusive=False)
        seed = check_int("seed", seed)
        self.config = {"hidden": hidden, "scale_decay": scale_decay, "eta": eta, "seed": int(seed)}
        self.scale_decay = scale_decay
        self.hidden = hidden
        g = torch.Generator().manual_seed(int(seed))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
            self.cell1 = nn.LSTMCell(1, hidden)
            self.cell2 = nn.LSTMCell(hidden, hidden)
            self.head = nn.Linear(hidden, 1)
        with torch.no_grad():
            self.head.weight.mul_(0.1)
            self.head.bias.zero_()
        self.log_eta = nn.Parameter(torch.tensor(math.log(eta)))

    def init_state(self, x0: torch.Tensor, t0: float) -> dict[str, Any]:
        """The tracker's state at decisions ``x0`` (B, d) and start time ``t0``."""
        st = super().init_state(x0, t0)
        n = x0.numel()
        z = torch.zeros(n, self.hidden, dtype=x0.dtype, device=x0.device)
        st["hc"] = (z, z, z, z)
        return st

    def step_from_grads(
        self, state: dict[str, Any], g: torch.Tensor, hv: torch.Tensor | None, t: float
    ) -> dict[str, Any]:
        """One update from the gradient ``g`` (B, d) and secant ``hv`` at time ``t``."""
        if not torch.isfinite(g).all():
            raise ValueError("the minibatch gradient contains NaN or inf")
        r = self._scale(state, g)
        inp = (g / (r + _EPS)).reshape(-1, 1)
        h1, c1, h2, c2 = state["hc"]
        h1, c1 = self.cell1(inp, (h1, c1))
        h2, c2 = self.cell2(h1, (h2, c2))
        out = self.head(h2).reshape(g.shape)
        new = dict(state)
        delta = r * out - self.log_eta.exp() * g
        new.update(
            x=state["x"] + delta,
            delta=delta,
            x_prev=state["x"],
            g_prev=g,
            k=state["k"] + 1,
            hc=(h1, c1, h2, c2),
        )
        return new
