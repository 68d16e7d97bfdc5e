"""Score Anisotropy Directions: eigenvectors of a score model's output-space NTK.

Our reading of the abstract (the paper's definition is not public): the SADs of an
architecture are the eigenvectors of

    K = E_{x0, s, eps}[ J_theta(x_s, s) J_theta(x_s, s)^T ]   (D x D),

the output-space neural tangent kernel of the eps-prediction network at its current
parameters (at initialization for a prediction before training), averaged over noisy
inputs ``x_s = sqrt(abar_s) x0 + sqrt(1 - abar_s) eps``. ``J_theta`` is the Jacobian of
the network's output with respect to its parameters, shape ``(D, P)``. Gradient descent
on the denoising loss fits the output directions with large eigenvalues fastest.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_choice, check_int
from torch import nn
from torch.func import functional_call, jacrev, jvp, linearize, vjp, vmap

from score_anisotropy.models import DDPMSchedule, _check_model

__all__ = [
    "SADResult",
    "alignment",
    "dct_basis",
    "dct_frequency",
    "empirical_ntk",
    "ntk_matvec",
    "sad",
    "spectral_stats",
]


@dataclass(frozen=True)
class SADResult:
    """The Score Anisotropy Directions of one model.

    Attributes:
        eigenvalues: The top-k eigenvalues of K, descending, shape ``(k,)``, float64.
        directions: Their unit eigenvectors as columns, shape ``(D, k)``, float64.
        anisotropy: ``lambda_max / mean(lambda)`` over all D eigenvalues (1 = isotropic).
        effective_rank: ``(sum lambda)^2 / sum lambda^2`` over all D eigenvalues, in
            ``[1, D]``.
        trace: ``tr K`` (exact for ``jacrev``, a Hutchinson estimate for ``lanczos``).
        method: ``"jacrev"`` or ``"lanczos"``.
    """

    eigenvalues: np.ndarray
    directions: np.ndarray
    anisotropy: float
    effective_rank: float
    trace: float
    method: str

    @property
    def dim(self) -> int:
        """The data dimension D."""
        return int(self.directions.shape[0])


def _params(model: nn.Module) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    params = {k: v.detach() for k, v in model.named_parameters() if v.requires_grad}
    frozen = {k: v.detach() for k, v in model.named_parameters() if not v.requires_grad}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    return params, {**frozen, **buffers}


def _check_inputs(model: nn.Module, x: torch.Tensor, t: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor of shape (n, D), got {type(x).__name__}")
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"t must be a torch.Tensor of shape (n,), got {type(t).__name__}")
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"x must have shape (n, D) with n >= 1, got {tuple(x.shape)}")
    if t.shape != (x.shape[0],):
        raise ValueError(f"t must have shape ({x.shape[0]},), got {tuple(t.shape)}")
    p = next(q for q in model.parameters() if q.requires_grad)
    for name, z in (("x", x), ("t", t)):
        if z.dtype != p.dtype or z.device != p.device:
            raise ValueError(
                f"{name} must have the model's dtype and device ({p.dtype}, {p.device}), "
                f"got ({z.dtype}, {z.device})"
            )
    dim = getattr(model, "dim", None)
    if isinstance(dim, int) and x.shape[1] != dim:
        raise ValueError(f"x has D = {x.shape[1]} columns but the model's D is {dim}")
    if not torch.isfinite(x).all():
        raise ValueError("x contains NaN or inf")


def empirical_ntk(model: nn.Module, x: torch.Tensor, t: torch.Tensor, chunk: int = 4) -> np.ndarray:
    """The exact output-space NTK ``(1/n) sum_i J_i J_i^T`` at given inputs (``jacrev``).

    Args:
        model: Network ``(B, D), (B,) -> (B, D)``; its trainable parameters define J.
        x: Noisy inputs, shape ``(n, D)``, in the model's dtype and device.
        t: Their times, shape ``(n,)``.
        chunk: Inputs per ``jacrev`` call (memory ``chunk * D * P`` floats).

    Returns:
        K, shape ``(D, D)``, float64, symmetric positive semi-definite.

    Raises:
        TypeError: If ``model`` is not a module or ``x``/``t`` are not tensors.
        ValueError: On bad shapes (including a D other than ``model.dim``), a dtype or
            device other than the model's, non-finite inputs, a model without
            trainable parameters, a model whose output is not ``(B, D)``, or a
            non-finite kernel (NaN or inf in the model's output or gradients).
    """
    _check_model(model)
    _check_inputs(model, x, t)
    chunk = check_int("chunk", chunk, low=1)
    params, rest = _params(model)
    n, d = x.shape
    K = torch.zeros(d, d, dtype=torch.float64, device=x.device)

    def f(p: dict[str, torch.Tensor], xi: torch.Tensor, ti: torch.Tensor) -> torch.Tensor:
        return _checked_output(functional_call(model, (p, rest), (xi[None], ti[None])), d)

    per_sample = vmap(jacrev(f), in_dims=(None, 0, 0))  # one Jacobian (D, P) per input
    for s in range(0, n, chunk):
        xb, tb = x[s : s + chunk], t[s : s + chunk]
        jac = per_sample(params, xb, tb)  # each (c, D, *shape)
        J = torch.cat([j.reshape(xb.shape[0], d, -1) for j in jac.values()], dim=2)
        K += torch.einsum("cdp,cep->de", J, J).double()  # in the model's dtype
    K = (K + K.T) / (2 * n)
    if not torch.isfinite(K).all():
        raise ValueError(_NONFINITE)
    return K.cpu().numpy()


_NONFINITE = (
    "model gives a non-finite tangent kernel at these inputs (NaN or inf in its output "
    "or its parameter gradients)"
)


def _checked_output(out: torch.Tensor, d: int) -> torch.Tensor:
    """The row of a one-row model output, after checking that it has shape ``(1, D)``."""
    if tuple(out.shape) != (1, d):
        raise ValueError(
            f"model must map x of shape (B, D) to (B, D) (the predicted noise); for D = {d} "
            f"it returned shape {tuple(out.shape)} for B = 1"
        )
    return out[0]


def ntk_matvec(
    model: nn.Module, x: torch.Tensor, t: torch.Tensor, chunk: int = 16, col_chunk: int = 8
):
    """A matrix-free product ``v -> K v`` with K as in :func:`empirical_ntk` (vjp then jvp).

    A matrix ``(D, m)`` is multiplied ``col_chunk`` columns at a time, each chunk of
    columns and inputs in one vmapped vjp-then-jvp call (the forward pass is shared by
    the columns). A single vector (what ``scipy.sparse.linalg.eigsh`` asks for) goes
    through a linearization built once, on the first such call, per chunk of inputs:
    the vjp's pullback and ``torch.func.linearize``'s jvp are kept and reused, so a
    product costs one backward and one tangent pass without recomputing the forward
    (about 1.7x faster per vector on a ``ScoreCNN``; ``benchmarks/README.md``). If
    ``linearize`` cannot trace the model, the jvp recomputes the forward instead.

    Args:
        model: As in :func:`empirical_ntk`.
        x: Inputs, shape ``(n, D)``.
        t: Times, shape ``(n,)``.
        chunk: Inputs per vmapped call (memory ``chunk * col_chunk * P`` floats).
        col_chunk: Columns of a matrix ``(D, m)`` multiplied in one vmapped call.

    Returns:
        A function mapping a float64 numpy vector ``(D,)`` (or matrix ``(D, m)``) to K v;
        it raises ``ValueError`` on an argument of another shape.

    Raises:
        TypeError, ValueError: As :func:`empirical_ntk`.
    """
    _check_model(model)
    _check_inputs(model, x, t)
    chunk = check_int("chunk", chunk, low=1)
    col_chunk = check_int("col_chunk", col_chunk, low=1)
    params, rest = _params(model)
    n, d = x.shape

    def f1(p: dict[str, torch.Tensor], xi: torch.Tensor, ti: torch.Tensor) -> torch.Tensor:
        return _checked_output(functional_call(model, (p, rest), (xi[None], ti[None])), d)

    def one(xi: torch.Tensor, ti: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        def f(p: dict[str, torch.Tensor]) -> torch.Tensor:
            return f1(p, xi, ti)

        _, pull = vjp(f, params)
        (g,) = pull(v)
        return jvp(f, (params,), (g,))[1]

    batched = vmap(vmap(one, in_dims=(0, 0, None)), in_dims=(None, None, 1))  # (m, c, D)
    linear: list[tuple[int, Any, Any]] = []  # per input chunk: (size, pullback, jvp)

    def linearized() -> list[tuple[int, Any, Any]]:
        if not linear:
            for s in range(0, n, chunk):
                xs, ts = x[s : s + chunk], t[s : s + chunk]
                c = xs.shape[0]
                # one copy of the parameters per input: vjp gives per-input J_i^T v
                pc = {key: v.expand(c, *v.shape).clone() for key, v in params.items()}

                def F(p: dict[str, torch.Tensor], xs=xs, ts=ts) -> torch.Tensor:
                    return vmap(f1)(p, xs, ts)

                _, pull = vjp(F, pc)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        _, push = linearize(F, pc)
                except Exception:  # a model make_fx cannot trace: jvp recomputes the forward
                    push = partial(_jvp_of, F, pc)
                linear.append((c, pull, push))
        return linear

    def matvec(v: np.ndarray) -> np.ndarray:
        vv = np.asarray(v, dtype=np.float64)
        if vv.ndim not in (1, 2) or vv.shape[0] != d:
            raise ValueError(f"v must have shape ({d},) or ({d}, m), got {vv.shape}")
        cols = vv.reshape(d, -1)
        out = np.zeros_like(cols)
        if cols.shape[1] == 1:  # one vector: the kept linearization
            V = torch.as_tensor(cols[:, 0], dtype=x.dtype, device=x.device)
            acc = torch.zeros(d, dtype=torch.float64, device=x.device)
            for c, pull, push in linearized():
                (g,) = pull(V.expand(c, d))
                acc += push(g).double().sum(0)
            out[:, 0] = (acc / n).cpu().numpy()
            if not np.isfinite(out).all():
                raise ValueError(_NONFINITE)
            return out.reshape(vv.shape)
        for j in range(0, cols.shape[1], col_chunk):
            V = torch.as_tensor(cols[:, j : j + col_chunk], dtype=x.dtype, device=x.device)
            acc = torch.zeros(V.shape[1], d, dtype=torch.float64, device=x.device)
            for s in range(0, n, chunk):
                acc += batched(x[s : s + chunk], t[s : s + chunk], V).double().sum(1)
            out[:, j : j + col_chunk] = (acc / n).T.cpu().numpy()
        if not np.isfinite(out).all():
            raise ValueError(_NONFINITE)
        return out.reshape(vv.shape)

    return matvec


def _jvp_of(F: Any, primals: dict[str, torch.Tensor], tangents: dict[str, torch.Tensor]):
    return jvp(F, (primals,), (tangents,))[1]


def spectral_stats(eigenvalues: np.ndarray) -> tuple[float, float]:
    """``(lambda_max / mean lambda, (sum lambda)^2 / sum lambda^2)`` of a full spectrum.

    Args:
        eigenvalues: All D eigenvalues of a PSD kernel, shape ``(D,)``; negative values
            (rounding of a PSD matrix) are clipped to 0.

    Returns:
        ``(anisotropy, effective_rank)``.

    Raises:
        ValueError: If ``eigenvalues`` is not a non-empty 1-D array, is non-finite, or
            has no positive entry.
    """
    try:
        lam = np.asarray(eigenvalues, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"eigenvalues must be a 1-D numeric array, got {type(eigenvalues).__name__}"
        ) from None
    if lam.ndim != 1 or lam.size == 0:
        raise ValueError(f"eigenvalues must have shape (D,) with D >= 1, got {lam.shape}")
    if not np.isfinite(lam).all():
        raise ValueError("eigenvalues contains NaN or inf")
    lam = np.clip(lam, 0.0, None)
    if not lam.max() > 0:
        raise ValueError("eigenvalues has no positive entry (a zero kernel)")
    return float(lam.max() / lam.mean()), float(lam.sum() ** 2 / (lam**2).sum())


def _noisy_inputs(
    X: np.ndarray | torch.Tensor,
    schedule: DDPMSchedule,
    n_inputs: int,
    seed: int,
    dtype: torch.dtype,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.as_tensor(np.asarray(X, dtype=np.float64) if not torch.is_tensor(X) else X)
    n = X.shape[0]
    rows = (
        torch.randperm(n, generator=g)[:n_inputs]
        if n >= n_inputs
        else torch.randint(n, (n_inputs,), generator=g)
    )
    x0 = X[rows].to(torch.float64)
    step = torch.randint(schedule.n_steps, (n_inputs,), generator=g)
    eps = torch.randn(x0.shape, generator=g, dtype=torch.float64)
    xs = schedule.add_noise(x0, step, eps)
    return xs.to(dtype=dtype, device=device), schedule.time(step).to(dtype=dtype, device=device)


def _check_data(
    X: object, dim: int | None, name: str = "X", against: str = " (the model's D)"
) -> np.ndarray:
    A = X.detach().cpu().numpy() if torch.is_tensor(X) else np.asarray(X)
    if A.ndim != 2 or A.shape[0] == 0:
        raise ValueError(f"{name} must have shape (n, D) with n >= 1, got {A.shape}")
    if not np.issubdtype(A.dtype, np.number):
        raise TypeError(f"{name} must be numeric, got dtype {A.dtype}")
    if not np.isfinite(A).all():
        raise ValueError(f"{name} contains NaN or inf")
    if dim is not None and A.shape[1] != dim:
        raise ValueError(f"{name} has D = {A.shape[1]} columns, expected {dim}{against}")
    return A.astype(np.float64, copy=False)


def _model_dim(model: nn.Module, X: np.ndarray) -> int:
    dim = getattr(model, "dim", None)
    if dim is None:
        p = next(model.parameters())
        with torch.no_grad():
            x = torch.zeros(1, X.shape[1], dtype=p.dtype, device=p.device)
            out = model(x, torch.ones(1, dtype=p.dtype, device=p.device))
        dim = out.shape[-1]
        if dim != X.shape[1]:
            raise ValueError(f"X has D = {X.shape[1]} columns but the model outputs {dim}")
    return int(dim)


def _block_krylov(
    mv: Any,
    d: int,
    k: int,
    rng: np.random.Generator,
    tol: float = 1e-4,
    max_dim: int = 0,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k eigenpairs of a PSD operator by block Lanczos with full reorthogonalization.

    Each step multiplies one block of ``b = k + 8`` columns in one batched call of ``mv``
    (vmapped vjp/jvp), adds the orthogonalized result to the Krylov basis V, and takes
    the Rayleigh-Ritz pairs of ``V^T K V`` (its ``K V`` is already known). It stops when
    the top-k Ritz values move by less than ``tol`` (relative) between steps, or when V
    has ``max_dim`` (default ``min(d, 8 b)``) columns.

    ``start = (Z, KZ)``: a first block whose products are already known (the Hutchinson
    probes of :func:`sad`); its first ``b`` columns span the first block (``K Q`` is
    ``KZ R^{-1}`` for ``Z = Q R``, no product spent), topped up with Gaussian columns if
    it has fewer than ``b``.
    """
    b = min(k + 8, d)
    max_dim = min(d, max_dim or 8 * b)
    if start is None:
        Z = rng.standard_normal((d, b))
        KZ = mv(Z)
    else:
        Z, KZ = start[0][:, :b], start[1][:, :b]
        if Z.shape[1] < b:
            G = rng.standard_normal((d, b - Z.shape[1]))
            Z, KZ = np.hstack([Z, G]), np.hstack([KZ, mv(G)])
    Q, R = np.linalg.qr(Z)
    if np.linalg.cond(R) < 1e6:
        W = np.linalg.solve(R.T, KZ.T).T  # K Q = K Z R^{-1}
    else:  # nearly dependent start columns: multiply the orthonormal block instead
        W = mv(Q)
    V, KV = Q, W
    prev = None
    while True:
        T = V.T @ KV
        lam, S = np.linalg.eigh((T + T.T) / 2)
        lam, S = lam[::-1], S[:, ::-1]
        top = lam[:k]
        done = prev is not None and np.max(np.abs(top - prev) / np.maximum(np.abs(top), 1e-300))
        if (prev is not None and done < tol) or V.shape[1] >= max_dim:
            break
        prev = top
        R = W - V @ (V.T @ W)
        R -= V @ (V.T @ R)  # twice is enough (Giraud et al. 2005)
        U, sv, _ = np.linalg.svd(R, full_matrices=False)
        keep = sv > 1e-10 * max(sv[0], 1e-300)
        Q = U[:, keep][:, : min(b, max_dim - V.shape[1])]
        if Q.shape[1] == 0:  # invariant subspace found
            break
        W = mv(Q)
        V, KV = np.hstack([V, Q]), np.hstack([KV, W])
    return np.clip(lam[:k], 0.0, None), V @ S[:, :k]


def sad(
    model: nn.Module,
    X: np.ndarray | torch.Tensor,
    schedule: DDPMSchedule | None = None,
    n_inputs: int = 64,
    k: int | None = None,
    method: str = "jacrev",
    *,
    seed: int = 0,
    trace_probes: int = 32,
    chunk: int | None = None,
) -> SADResult:
    """Score Anisotropy Directions of ``model`` on data ``X``.

    Draws ``n_inputs`` rows of ``X``, a uniform diffusion step and Gaussian noise for
    each, and diagonalizes the output-space NTK averaged over those noisy inputs.

    Args:
        model: eps-prediction network ``(B, D), (B,) -> (B, D)`` (see :mod:`.models`).
        X: Clean data, shape ``(n, D)``.
        schedule: Noise schedule; ``DDPMSchedule()`` if None.
        n_inputs: Noisy inputs in the average.
        k: Number of directions returned; all D if None (``jacrev``), 16 (``lanczos``,
            ``block``).
        method: ``"jacrev"`` (exact; memory ``D * P`` floats per input), ``"lanczos"``
            (matrix-free, ``scipy.sparse.linalg.eigsh`` on vjp/jvp products, one vector
            at a time through a linearization kept across products, see
            :func:`ntk_matvec`) or ``"block"`` (matrix-free block Lanczos with full
            reorthogonalization: blocks of ``k + 8`` columns in one batched vjp/jvp
            call, started from the trace probes, whose products it reuses, and stopped
            when the top-k Ritz values move by < 1e-4 relative). Both
            matrix-free methods take the anisotropy and effective rank from Hutchinson
            estimates of ``tr K`` and ``tr K^2`` (``trace_probes`` Rademacher probes).
        seed: Seed of the drawn inputs, steps, noise and probes.
        trace_probes: Probes for the Hutchinson estimates (``lanczos``, ``block``).
        chunk: Inputs per vectorized call; 4 (``jacrev``) or 16 (``lanczos``) if None.

    Returns:
        The :class:`SADResult`.

    Raises:
        TypeError: If ``model`` is not a module or ``X`` is not numeric.
        ValueError: If ``X`` is not ``(n, D)`` with the model's D, is non-finite, if
            ``k`` is not in ``[1, D]`` (``< D`` for ``lanczos`` and ``block``), ``n_inputs``,
            ``trace_probes`` or ``chunk`` is below 1, ``seed`` is negative, the model
            has no trainable parameters, its output is not ``(B, D)``, or its kernel is
            not finite.
    """
    _check_model(model)
    method = check_choice("method", method, ("jacrev", "lanczos", "block"))
    A = _check_data(X, None)
    d = _model_dim(model, A)
    A = _check_data(A, d)
    n_inputs = check_int("n_inputs", n_inputs, low=1)
    seed = check_int("seed", seed, low=0)
    trace_probes = check_int("trace_probes", trace_probes, low=1)
    if chunk is not None:
        chunk = check_int("chunk", chunk, low=1)
    schedule = DDPMSchedule() if schedule is None else schedule
    if not isinstance(schedule, DDPMSchedule):
        raise TypeError(f"schedule must be a DDPMSchedule, got {type(schedule).__name__}")
    if k is None:
        k = d if method == "jacrev" else min(16, d - 1)
    k = check_int("k", k, low=1, high=d if method == "jacrev" else d - 1)
    p = next(q for q in model.parameters() if q.requires_grad)
    x, t = _noisy_inputs(A, schedule, n_inputs, seed, p.dtype, p.device)
    if method == "jacrev":
        K = empirical_ntk(model, x, t, chunk=chunk or 4)
        lam, U = np.linalg.eigh(K)
        lam, U = lam[::-1], U[:, ::-1]
        aniso, erank = spectral_stats(lam)
        return SADResult(lam[:k].copy(), U[:, :k].copy(), aniso, erank, float(np.trace(K)), method)
    from scipy.sparse.linalg import LinearOperator, eigsh

    # one product for both: single vectors (eigsh) through the kept linearization,
    # blocks of k + 8 columns (probes, block Lanczos) in one vmapped call each
    mv = ntk_matvec(model, x, t, chunk=chunk or 16, col_chunk=min(k + 8, d))
    probes = np.random.default_rng(seed + 1).choice([-1.0, 1.0], size=(d, trace_probes))
    KZ = mv(probes)
    if method == "lanczos":
        op = LinearOperator((d, d), matvec=mv, dtype=np.float64)
        v0 = np.random.default_rng(seed).standard_normal(d)
        # Ritz values to 1e-4 relative (ARPACK's tol; 1e-6 took ~15% more products
        # for errors below 1e-7 either way, benchmarks/README.md)
        lam, U = eigsh(op, k=k, which="LA", v0=v0, tol=1e-4)
        order = np.argsort(lam)[::-1]
        lam, U = np.clip(lam[order], 0.0, None), U[:, order]
    else:  # block Lanczos, started from the probes (their products are known)
        lam, U = _block_krylov(mv, d, k, np.random.default_rng(seed), start=(probes, KZ))
    trace = float(np.mean(np.sum(probes * KZ, axis=0)))
    trace_sq = float(np.mean(np.sum(KZ * KZ, axis=0)))
    mean = trace / d
    return SADResult(lam, U, float(lam[0] / mean), float(trace**2 / trace_sq), trace, method)


def alignment(
    result: SADResult, X: np.ndarray | torch.Tensor, k: int | None = None
) -> dict[str, float]:
    """How much of the data's variance lies in the top SADs, relative to chance.

    ``top_k = [tr(U_k^T Sigma U_k) / tr Sigma] / (k / D)`` (1 for a random k-dimensional
    subspace, D / k at most) and the spectrum-weighted
    ``weighted = [sum_i lambda_i u_i^T Sigma u_i / sum_i lambda_i] / (tr Sigma / D)``
    over the returned directions (1 when K is isotropic or the data is).

    Args:
        result: A :class:`SADResult`.
        X: Data, shape ``(n, D)`` with n >= 2.
        k: Top directions in ``top_k``; ``min(8, returned)`` if None.

    Returns:
        ``{"top_k": ..., "weighted": ..., "k": k}``.

    Raises:
        TypeError: If ``result`` is not a :class:`SADResult` or ``X`` is not numeric.
        ValueError: If ``X`` is not ``(n, D)`` with the result's D and n >= 2, is
            non-finite or has zero variance, or ``k`` is not in ``[1, returned]``.
    """
    if not isinstance(result, SADResult):
        raise TypeError(f"result must be a SADResult, got {type(result).__name__}")
    A = _check_data(X, result.dim, "X", " (the D of the SADs)")
    if A.shape[0] < 2:
        raise ValueError(f"X needs at least 2 rows for a covariance, got {A.shape[0]}")
    m = result.directions.shape[1]
    k = check_int("k", min(8, m) if k is None else k, low=1, high=m)
    S = np.cov(A, rowvar=False)
    tr = float(np.trace(S))
    if tr <= 0:
        raise ValueError("X has zero variance")
    U = result.directions
    per = np.einsum("di,de,ei->i", U, S, U)
    d = result.dim
    top = float(per[:k].sum() / tr / (k / d))
    lam = np.clip(result.eigenvalues, 0.0, None)
    weighted = float((lam * per).sum() / lam.sum() / (tr / d))
    return {"top_k": top, "weighted": weighted, "k": k}


def dct_basis(side: int) -> np.ndarray:
    """Orthonormal 2-D DCT-II basis of a ``side x side`` grid.

    Returns:
        ``(D, D)`` array whose column ``a * side + b`` is the mode of frequency
        ``(a, b)`` flattened row-major; its frequency is ``a + b``.

    Raises:
        TypeError, ValueError: If ``side`` is not an integer >= 1.
    """
    side = check_int("side", side, low=1)
    n = np.arange(side)
    C = np.cos(np.pi * (n[None, :] + 0.5) * n[:, None] / side)
    C[0] /= np.sqrt(2)
    C *= np.sqrt(2 / side)  # rows: frequencies; C @ C.T = I
    return np.kron(C, C).T


def dct_frequency(directions: np.ndarray) -> np.ndarray:
    """Mean DCT frequency ``sum_{a,b} (a + b) c_ab^2 / sum_{a,b} c_ab^2`` of each column.

    Args:
        directions: Shape ``(D, k)`` with ``D = side**2`` (images flattened row-major),
            or one direction ``(D,)``; columns need not be unit.

    Returns:
        Shape ``(k,)`` (a float for one direction), in ``[0, 2 * (side - 1)]``.

    Raises:
        ValueError: If D is not a square or a column is zero.
        TypeError: If ``directions`` is not numeric.
    """
    U = np.asarray(directions)
    if not np.issubdtype(U.dtype, np.number):
        raise TypeError(f"directions must be numeric, got dtype {U.dtype}")
    U = U.astype(np.float64)
    if U.ndim not in (1, 2):
        raise ValueError(f"directions must have shape (D, k), got {U.shape}")
    d = U.shape[0]
    side = round(np.sqrt(d))
    if side * side != d:
        raise ValueError(f"directions must have D = side**2 rows, got {d}")
    B = dct_basis(side)
    a, b = np.divmod(np.arange(d), side)
    c2 = (B.T @ U) ** 2
    if np.any(c2.sum(axis=0) == 0):
        raise ValueError("directions has a zero column")
    return (a + b) @ c2 / c2.sum(axis=0)
