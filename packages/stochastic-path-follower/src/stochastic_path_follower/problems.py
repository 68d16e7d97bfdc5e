"""Drifting stochastic problems: minibatches at times ``t_k`` and the exact path ``x*_k``.

A scenario is a sequence of distributions ``P_k`` (k = 0..K-1) at increasing times
``t_k``; a decision ``X_k`` is scored by the population loss
``f_k(x) = E_{xi ~ P_k} l(x; xi)``, whose minimiser is ``x*_k``. A method only sees
minibatches drawn from ``P_k``; the scenario also offers ``f_k`` and ``x*_k`` for
training and for scoring.

Every tensor of decisions has shape ``(B, d)``: ``B`` independent episodes (independent
measurement streams over the same path) side by side; ``B = 1`` for one stream.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from icml26_core.validation import check_float, check_int

__all__ = [
    "DriftingLeastSquares",
    "DriftingLogistic",
    "LeastSquaresBatch",
    "LogisticBatch",
    "Minibatch",
    "Scenario",
]


@runtime_checkable
class Minibatch(Protocol):
    """One minibatch per episode: gradients of its empirical loss at decisions ``x``."""

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        """Gradient of the minibatch loss at ``x`` (B, d); returns (B, d)."""
        ...


@runtime_checkable
class Scenario(Protocol):
    """A drifting stochastic problem with a known solution path.

    Attributes:
        dim: Decision dimension ``d``.
        times: Increasing times ``t_k``, shape (K,).
    """

    dim: int
    times: np.ndarray

    def __len__(self) -> int: ...

    def sample(self, k: int, episodes: int, generator: torch.Generator) -> Minibatch:
        """A minibatch from ``P_k`` for each of ``episodes`` independent streams."""
        ...

    def reference_path(self) -> torch.Tensor:
        """The exact minimisers ``x*_k`` of the population losses, shape (K, d)."""
        ...

    def population_loss(self, k: int, x: torch.Tensor) -> torch.Tensor:
        """``f_k(x)`` for each row of ``x`` (B, d); returns (B,)."""
        ...


def _check_times(times: Any, n: int) -> np.ndarray:
    if times is None:
        return np.arange(n, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    if t.shape != (n,):
        raise ValueError(f"times must have shape ({n},), got {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError("times must be finite, got NaN or inf")
    if n > 1 and not np.all(np.diff(t) > 0):
        raise ValueError("times must be strictly increasing")
    return t


def _check_dtype(dtype: Any) -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype (e.g. torch.float32), got {dtype!r}")
    return dtype


def _check_device(device: Any) -> torch.device:
    try:
        return torch.device("cpu" if device is None else device)
    except (TypeError, RuntimeError) as e:
        raise ValueError(
            f"device must be a torch.device or a string such as 'cpu' or 'cuda', got {device!r}"
        ) from e


def _draw_device(generator: torch.Generator | None, device: torch.device) -> torch.device:
    """Where to draw random numbers: on the generator's device (then moved to ``device``)."""
    return generator.device if generator is not None else device


def _check_step(k: Any, n: int) -> int:
    return check_int("k", k, low=0, high=n - 1)


def _check_decisions(x: Any, d: int, dtype: torch.dtype, rows: int | None = None) -> None:
    """Raise a clear error unless ``x`` is a (B, d) tensor of ``dtype``.

    ``rows``: the minibatch's episode count B; either side may have one row (broadcast).
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor of shape (B, {d}), got {type(x).__name__}")
    mismatch = (
        rows is not None and 1 not in (rows, x.shape[0] if x.ndim else 1) and x.shape[0] != rows
    )
    if x.ndim != 2 or x.shape[1] != d or mismatch:
        want = f"({rows}, {d})" if rows is not None else f"(B, {d})"
        raise ValueError(f"x must have shape {want}, got {tuple(x.shape)}")
    if x.dtype != dtype:
        raise TypeError(
            f"x has dtype {x.dtype} but the problem computes in {dtype}: cast x with .to({dtype})"
        )


def _check_generator(generator: Any) -> None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None, got {type(generator).__name__}"
        )


def _finite_2d(name: str, a: Any, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    try:
        if isinstance(a, torch.Tensor):
            a = a.detach().cpu()
        # never share the caller's array
        t = torch.as_tensor(np.asarray(a), dtype=dtype).clone().to(device)
    except (TypeError, ValueError, RuntimeError) as e:
        raise TypeError(f"{name} must be a numeric array, got {type(a).__name__}: {e}") from e
    if t.ndim != 2 or t.shape[0] < 1 or t.shape[1] < 1:
        raise ValueError(f"{name} must be a non-empty 2-D array, got shape {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or inf")
    return t


class LeastSquaresBatch:
    """``l(x; A, y) = 0.5 ||A x - y||^2`` per episode, ``A`` (B, m, d), ``y`` (B, m)."""

    def __init__(self, A: torch.Tensor, y: torch.Tensor) -> None:
        self.A, self.y = A, y

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        """Gradient of the minibatch loss at each row of ``x`` (B, d); returns (B, d).

        Raises:
            TypeError: If ``x`` is not a tensor of the batch's dtype.
            ValueError: If ``x`` is not of shape (B, d) (or (1, d)).
        """
        _check_decisions(x, self.A.shape[2], self.A.dtype, self.A.shape[0])
        r = torch.einsum("bmd,bd->bm", self.A, x) - self.y
        return torch.einsum("bmd,bm->bd", self.A, r)

    def grad_pair(self, x: torch.Tensor, x2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(grad(x), grad(x2))`` from one batched product (SPF's gradient and secant).

        Raises:
            TypeError: If ``x`` or ``x2`` is not a tensor of the batch's dtype.
            ValueError: If either is not of shape (B, d) (or (1, d)).
        """
        _check_decisions(x, self.A.shape[2], self.A.dtype, self.A.shape[0])
        _check_decisions(x2, self.A.shape[2], self.A.dtype, self.A.shape[0])
        X = torch.stack(torch.broadcast_tensors(x, x2), -1)  # (B, d, 2)
        G = self.A.transpose(1, 2) @ (self.A @ X - self.y.unsqueeze(-1))
        return G[..., 0], G[..., 1]

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        """The minibatch loss at each row of ``x`` (B, d); returns (B,)."""
        _check_decisions(x, self.A.shape[2], self.A.dtype, self.A.shape[0])
        r = torch.einsum("bmd,bd->bm", self.A, x) - self.y
        return 0.5 * (r * r).sum(-1)


class DriftingLeastSquares:
    """Least-squares recovery of a drifting signal from underdetermined measurements.

    At step k each episode observes ``y_k = A_k x*_k + noise``, with ``A_k`` of shape
    (m, d) drawn i.i.d. N(0, 1/m) and noise i.i.d. N(0, ``noise``^2). The minibatch
    loss ``0.5 ||A_k x - y_k||^2`` is unbiased for the population loss
    ``f_k(x) = 0.5 ||x - x*_k||^2 + 0.5 m noise^2`` (since ``E[A^T A] = I``), so the
    path ``x*_k`` is the signal itself and ``f_k(X) - f_k(x*_k) = 0.5 ||X - x*_k||^2``.

    Args:
        signal: The path ``x*_k``, shape (K, d), finite.
        m: Measurements per step, >= 1 (m < d: every step is underdetermined).
        noise: Measurement noise standard deviation, >= 0.
        times: Increasing times ``t_k``, shape (K,); default ``0, 1, ..., K-1``.
        dtype: Floating dtype of the tensors.
        device: Device of the tensors (signal, minibatches); default the CPU. Random
            numbers are drawn on the generator's device, then moved here.

    Raises:
        TypeError: On a non-numeric signal, a non-integer m, or a non-floating dtype.
        ValueError: On a non-2-D or non-finite signal, m < 1, negative noise,
            times that are not strictly increasing, or an unknown device.
    """

    def __init__(
        self,
        signal: Any,
        m: int,
        noise: float = 0.1,
        times: Any = None,
        dtype: torch.dtype = torch.float32,
        device: Any = None,
    ) -> None:
        dtype = _check_dtype(dtype)
        self.device = _check_device(device)
        self.signal = _finite_2d("signal", signal, dtype, self.device)
        self.m = check_int("m", m, low=1)
        self.noise = check_float("noise", noise, low=0.0)
        self.dim = int(self.signal.shape[1])
        self.times = _check_times(times, len(self.signal))
        self.dtype = dtype

    def __len__(self) -> int:
        return int(self.signal.shape[0])

    def sample(self, k: int, episodes: int, generator: torch.Generator) -> LeastSquaresBatch:
        """A minibatch from ``P_k`` for each of ``episodes`` independent streams.

        Raises:
            TypeError: If ``generator`` is not a ``torch.Generator`` (or None).
            ValueError: If ``k`` is outside ``[0, K)`` or ``episodes`` < 0.
        """
        k, episodes = _check_step(k, len(self)), check_int("episodes", episodes, low=0)
        _check_generator(generator)
        B, m, d = episodes, self.m, self.dim
        dev = _draw_device(generator, self.device)
        A = torch.randn(B, m, d, generator=generator, dtype=self.dtype, device=dev)
        e = torch.randn(B, m, generator=generator, dtype=self.dtype, device=dev)
        A, e = A.to(self.device) / m**0.5, e.to(self.device) * self.noise
        y = A @ self.signal[k] + e
        return LeastSquaresBatch(A, y)

    def reference_path(self) -> torch.Tensor:
        """The exact path ``x*_k``, shape (K, d)."""
        return self.signal.clone()

    def population_loss(self, k: int, x: torch.Tensor) -> torch.Tensor:
        """``f_k(x)`` for each row of ``x`` (B, d); returns (B,).

        Raises:
            ValueError: If ``k`` is outside ``[0, K)`` or ``x`` is not of shape (B, d).
        """
        k = _check_step(k, len(self))
        _check_decisions(x, self.dim, x.dtype if isinstance(x, torch.Tensor) else self.dtype)
        diff = x - self.signal[k]
        return 0.5 * (diff * diff).sum(-1) + 0.5 * self.m * self.noise**2

    def population_grad(self, k: int, x: torch.Tensor) -> torch.Tensor:
        """``grad f_k(x) = x - x*_k`` (the normal equations ``E[A^T A] x = E[A^T y]``).

        Raises:
            ValueError: If ``k`` is outside ``[0, K)`` or ``x`` is not of shape (B, d).
        """
        k = _check_step(k, len(self))
        _check_decisions(x, self.dim, x.dtype if isinstance(x, torch.Tensor) else self.dtype)
        return x - self.signal[k]


class LogisticBatch:
    """Mean logistic loss of ``n`` labelled points per episode plus ``0.5 reg ||x||^2``.

    ``a`` (B, n, d) features, ``s`` (B, n) labels in {-1, +1}.
    """

    def __init__(self, a: torch.Tensor, s: torch.Tensor, reg: float) -> None:
        self.a, self.s, self.reg = a, s, reg

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        """Gradient of the minibatch loss at each row of ``x`` (B, d); returns (B, d).

        Raises:
            TypeError: If ``x`` is not a tensor of the batch's dtype.
            ValueError: If ``x`` is not of shape (B, d) (or (1, d)).
        """
        _check_decisions(x, self.a.shape[2], self.a.dtype, self.a.shape[0])
        z = self.s * torch.einsum("bnd,bd->bn", self.a, x)
        w = -self.s * torch.sigmoid(-z) / self.a.shape[1]
        return torch.einsum("bnd,bn->bd", self.a, w) + self.reg * x

    def grad_pair(self, x: torch.Tensor, x2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(grad(x), grad(x2))`` from one batched product (SPF's gradient and secant).

        Raises:
            TypeError: If ``x`` or ``x2`` is not a tensor of the batch's dtype.
            ValueError: If either is not of shape (B, d) (or (1, d)).
        """
        _check_decisions(x, self.a.shape[2], self.a.dtype, self.a.shape[0])
        _check_decisions(x2, self.a.shape[2], self.a.dtype, self.a.shape[0])
        X = torch.stack(torch.broadcast_tensors(x, x2), -1)  # (B, d, 2)
        s = self.s.unsqueeze(-1)
        w = -s * torch.sigmoid(-s * (self.a @ X)) / self.a.shape[1]
        G = self.a.transpose(1, 2) @ w + self.reg * X
        return G[..., 0], G[..., 1]

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        """The minibatch loss at each row of ``x`` (B, d); returns (B,)."""
        _check_decisions(x, self.a.shape[2], self.a.dtype, self.a.shape[0])
        z = self.s * torch.einsum("bnd,bd->bn", self.a, x)
        return torch.nn.functional.softplus(-z).mean(-1) + 0.5 * self.reg * (x * x).sum(-1)


def _logistic_fit(a: np.ndarray, s: np.ndarray, reg: float, tol: float = 1e-12) -> np.ndarray:
    """Newton's method for ``mean softplus(-s a x) + 0.5 reg ||x||^2`` in float64.

    In torch, so that it runs on torch's thread pool (``torch.set_num_threads``): numpy's
    OpenBLAS starts one thread per core and, on a busy machine, spent 8x the CPU time.
    """
    A = torch.as_tensor(a, dtype=torch.float64)
    S = torch.as_tensor(s, dtype=torch.float64)
    n, d = A.shape
    eye = torch.eye(d, dtype=torch.float64)
    x = torch.zeros(d, dtype=torch.float64)
    for _ in range(100):
        z = S * (A @ x)
        p = torch.sigmoid(-z)
        g = -(A.T @ (S * p)) / n + reg * x
        if float(torch.linalg.vector_norm(g)) < tol:
            break
        w = p * (1.0 - p)
        H = (A.T * w) @ A / n + reg * eye
        x = x - torch.linalg.solve(H, g)
    return x.numpy()


class DriftingLogistic:
    """L2-regularised logistic regression whose data distribution drifts.

    ``P_k`` is the uniform distribution over the rows of ``features[state[k]]`` (one
    data set per state, e.g. the images rotated by one angle of a grid), with labels
    ``labels`` in {-1, +1}; minibatches draw ``batch`` rows with replacement. ``x*_k``
    is the exact regularised fit to data set ``state[k]`` (Newton's method, float64,
    gradient norm below 1e-12), computed once per state used.

    Args:
        features: The data sets, shape (S, n, d), finite.
        labels: Labels, shape (n,), values in {-1, +1}.
        state: Which data set each step uses, integers in [0, S), shape (K,).
        batch: Minibatch size, >= 1.
        reg: L2 weight, > 0.
        times: Increasing times ``t_k``; default ``0..K-1``.
        dtype: Floating dtype of the tensors.
        device: Device of the tensors (data sets, minibatches, path); default the CPU.
            The exact fits run in float64 on the CPU.

    Raises:
        TypeError: On non-numeric features or a non-floating dtype.
        ValueError: On mismatched shapes, labels outside {-1, +1}, NaN or inf,
            batch < 1, reg <= 0, a state out of range, non-increasing times, or an
            unknown device.
    """

    def __init__(
        self,
        features: Any,
        labels: Any,
        state: Any,
        batch: int = 32,
        reg: float = 1e-2,
        times: Any = None,
        dtype: torch.dtype = torch.float32,
        device: Any = None,
    ) -> None:
        dtype = _check_dtype(dtype)
        self.device = _check_device(device)
        try:  # a copy: later changes to the caller's array must not reach the fits
            f = np.array(features, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise TypeError(f"features must be a numeric array: {e}") from e
        if f.ndim != 3 or min(f.shape) < 1:
            raise ValueError(f"features must have shape (S, n, d), got {f.shape}")
        if not np.all(np.isfinite(f)):
            raise ValueError("features contains NaN or inf")
        try:
            lab = np.array(labels, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise TypeError(f"labels must be a numeric array: {e}") from e
        if lab.shape != (f.shape[1],):
            raise ValueError(f"labels must have shape ({f.shape[1]},), got {lab.shape}")
        if not np.all(np.isin(lab, (-1.0, 1.0))):
            raise ValueError("labels must be -1 or +1")
        st = np.asarray(state)
        if st.ndim != 1 or st.size < 1 or not np.issubdtype(st.dtype, np.integer):
            raise ValueError(
                "state must be a non-empty 1-D integer array, "
                f"got shape {st.shape} and dtype {st.dtype}"
            )
        if st.min() < 0 or st.max() >= f.shape[0]:
            raise ValueError(
                f"state values must lie in [0, {f.shape[0]}), got {st.min()}..{st.max()}"
            )
        self.batch = check_int("batch", batch, low=1)
        self.reg = check_float("reg", reg, low=0.0, low_inclusive=False)
        self.dim = int(f.shape[2])
        self.times = _check_times(times, st.size)
        self.state = st.astype(np.int64)
        self.dtype = dtype
        self._f64 = f
        self._lab64 = lab
        self.features = torch.as_tensor(f, dtype=dtype).to(self.device)
        self.labels = torch.as_tensor(lab, dtype=dtype).to(self.device)
        self._fits: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return int(self.state.size)

    def with_state(self, state: Any, times: Any = None) -> DriftingLogistic:
        """The same data sets under another drift ``state`` (and ``times``).

        The new scenario shares the data tensors and the cache of exact fits with this
        one (no copy, no refit of a state either has solved).

        Raises:
            ValueError: On a state that is not a non-empty 1-D integer array in
                ``[0, S)``, or times that are not strictly increasing.
        """
        st = np.asarray(state)
        if st.ndim != 1 or st.size < 1 or not np.issubdtype(st.dtype, np.integer):
            raise ValueError(
                "state must be a non-empty 1-D integer array, "
                f"got shape {st.shape} and dtype {st.dtype}"
            )
        if st.min() < 0 or st.max() >= self.features.shape[0]:
            raise ValueError(
                f"state values must lie in [0, {self.features.shape[0]}), "
                f"got {st.min()}..{st.max()}"
            )
        new = copy.copy(self)
        new.state = st.astype(np.int64)
        new.times = _check_times(times, st.size)
        return new

    def fit_state(self, s: int) -> np.ndarray:
        """The exact regularised fit to data set ``s`` (float64, cached)."""
        if s not in self._fits:
            self._fits[s] = _logistic_fit(self._f64[s], self._lab64, self.reg)
        return self._fits[s]

    def sample(self, k: int, episodes: int, generator: torch.Generator) -> LogisticBatch:
        """A minibatch from ``P_k`` for each of ``episodes`` independent streams.

        Raises:
            TypeError: If ``generator`` is not a ``torch.Generator`` (or None).
            ValueError: If ``k`` is outside ``[0, K)`` or ``episodes`` < 0.
        """
        k, episodes = _check_step(k, len(self)), check_int("episodes", episodes, low=0)
        _check_generator(generator)
        data = self.features[int(self.state[k])]
        dev = _draw_device(generator, self.device)
        idx = torch.randint(
            0, data.shape[0], (episodes, self.batch), generator=generator, device=dev
        ).to(self.device)
        return LogisticBatch(data[idx], self.labels[idx], self.reg)

    def reference_path(self) -> torch.Tensor:
        """The exact path ``x*_k``, shape (K, d)."""
        return torch.as_tensor(
            np.stack([self.fit_state(int(s)) for s in self.state]), dtype=self.dtype
        ).to(self.device)

    def population_loss(self, k: int, x: torch.Tensor) -> torch.Tensor:
        """``f_k(x)`` for each row of ``x`` (B, d); returns (B,).

        Raises:
            TypeError: If ``x`` is not a tensor of the scenario's dtype.
            ValueError: If ``k`` is outside ``[0, K)`` or ``x`` is not of shape (B, d).
        """
        k = _check_step(k, len(self))
        _check_decisions(x, self.dim, self.dtype)
        data = self.features[int(self.state[k])]
        z = self.labels * (x @ data.T)
        return torch.nn.functional.softplus(-z).mean(-1) + 0.5 * self.reg * (x * x).sum(-1)

    def population_grad(self, k: int, x: torch.Tensor) -> torch.Tensor:
        """Full-data gradient of ``f_k`` at each row of ``x``.

        Raises:
            TypeError: If ``x`` is not a tensor of the scenario's dtype.
            ValueError: If ``k`` is outside ``[0, K)`` or ``x`` is not of shape (B, d).
        """
        k = _check_step(k, len(self))
        _check_decisions(x, self.dim, self.dtype)
        data = self.features[int(self.state[k])]
        z = self.labels * (x @ data.T)
        w = -self.labels * torch.sigmoid(-z) / data.shape[0]
        return w @ data + self.reg * x

    def accuracy(self, k: int, x: torch.Tensor) -> torch.Tensor:
        """Fraction of data set ``state[k]`` that ``sign(a x)`` classifies right, (B,).

        Raises:
            TypeError: If ``x`` is not a tensor of the scenario's dtype.
            ValueError: If ``k`` is outside ``[0, K)`` or ``x`` is not of shape (B, d).
        """
        k = _check_step(k, len(self))
        _check_decisions(x, self.dim, self.dtype)
        data = self.features[int(self.state[k])]
        return ((x @ data.T) * self.labels > 0).to(x.dtype).mean(-1)


def stream(
    scenario: Scenario, seed: int = 0, episodes: int = 1
) -> Iterator[tuple[float, Minibatch]]:
    """The minibatches of ``scenario`` in time order, as ``(t_k, batch_k)`` pairs.

    Args:
        scenario: A :class:`Scenario`.
        seed: Seed of the minibatches.
        episodes: Independent streams side by side, >= 1: each batch's ``grad`` then
            takes decisions of shape (episodes, d).

    Raises:
        TypeError: If ``scenario`` does not follow the :class:`Scenario` protocol or
            ``seed`` is not an integer.
        ValueError: If ``episodes`` < 1.

    The minibatches are drawn by a generator on the scenario's ``device`` (the CPU if
    it has none).
    """
    if not isinstance(scenario, Scenario):
        raise TypeError(
            f"scenario must follow the Scenario protocol, got {type(scenario).__name__}"
        )
    episodes = check_int("episodes", episodes, low=1)
    seed = check_int("seed", seed)
    g = torch.Generator(device=getattr(scenario, "device", "cpu")).manual_seed(seed)
    for k in range(len(scenario)):
        yield float(scenario.times[k]), scenario.sample(k, episodes, g)
