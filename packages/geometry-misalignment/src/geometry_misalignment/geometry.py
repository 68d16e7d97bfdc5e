"""The intrinsic (Wasserstein) metric pulled back to parameters, and its condition number.

For a push-forward ``T_theta`` of source samples ``x_1..x_n`` (``outputs[i] =
T_theta(x_i)``), the L2(mu) metric on particle positions pulled back to parameters is

    G(theta) = (1/n) sum_i J_i^T J_i,      J_i = d T_theta(x_i) / d theta,

the Wasserstein information matrix (a particle Gauss-Newton matrix). Our reading of
the paper's *geometry-misalignment* is its condition number on the subspace where it
is not zero, ``kappa = lambda_max(G) / lambda_min+(G)``: Euclidean gradient steps see
the curvature of the objective through G, so their rate degrades with kappa. For a
linear map ``T_W(x) = x W`` (W of shape (d_in, d_out)), ``G = Sigma_x (x) I`` with
``Sigma_x = X^T X / n`` the uncentered second moment, so ``kappa = cond(Sigma_x)``.

G is never formed: :class:`MetricOperator` applies it with two reverse-mode passes
(the "double backward" Jacobian-vector trick), and :func:`lanczos_extremes` estimates
its extreme eigenvalues from a few products.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from icml26_core.validation import check_float, check_int
from torch import Tensor, nn

__all__ = ["MetricOperator", "lanczos_extremes", "metric_matrix", "misalignment"]


def _check_outputs(outputs: object) -> Tensor:
    if not isinstance(outputs, Tensor):
        raise TypeError(f"outputs must be a torch.Tensor, got {type(outputs).__name__}")
    if outputs.dim() == 0 or outputs.shape[0] == 0:
        raise ValueError(
            f"outputs must have a non-empty sample dimension, got {tuple(outputs.shape)}"
        )
    if not outputs.requires_grad:
        raise ValueError("outputs must depend on the parameters (requires_grad is False)")
    if not bool(torch.isfinite(outputs.detach()).all()):
        raise ValueError("outputs contain NaN or inf")
    return outputs


class MetricOperator:
    """``v -> G v`` for ``G = (1/n) sum_i J_i^T J_i`` of ``outputs`` w.r.t. ``params``.

    Args:
        outputs: ``T_theta(x)``, shape ``(n, ...)``, first dimension the samples, with
            its autograd graph to ``params``. The graph is kept (``retain_graph``) until
            this operator is dropped.
        params: The parameters (tensors with ``requires_grad``) that G is taken over.

    Raises:
        TypeError: If ``outputs`` is not a tensor or ``params`` is a single tensor.
        ValueError: On outputs that are not finite, that do not depend on any of the
            parameters, or an empty parameter list.
    """

    def __init__(self, outputs: Tensor, params: Sequence[Tensor]) -> None:
        self.outputs = _check_outputs(outputs)
        if isinstance(params, Tensor):
            raise TypeError("params must be a sequence of tensors, not a single tensor: pass [p]")
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("params must contain at least one tensor with requires_grad")
        self.n = int(outputs.shape[0])
        self.dim = sum(p.numel() for p in self.params)
        self._u = torch.zeros_like(outputs, requires_grad=True)
        # J^T u as a function of u (linear); differentiating it in u gives J v.
        jt_u = torch.autograd.grad(
            outputs, self.params, self._u, create_graph=True, allow_unused=True
        )
        if all(g is None for g in jt_u):
            # G would be zero: a damped solve would then step by grad / damping
            raise ValueError("outputs do not depend on any of params (no autograd path)")
        self._jt_u = [
            torch.zeros_like(p) if g is None else g for g, p in zip(jt_u, self.params, strict=True)
        ]
        self.calls = 0

    def flatten(self, tensors: Sequence[Tensor]) -> Tensor:
        """Concatenate per-parameter tensors into one vector of length :attr:`dim`."""
        return torch.cat([t.reshape(-1) for t in tensors])

    def unflatten(self, vector: Tensor) -> list[Tensor]:
        """Split a vector of length :attr:`dim` into tensors shaped like the parameters."""
        out, i = [], 0
        for p in self.params:
            out.append(vector[i : i + p.numel()].view_as(p))
            i += p.numel()
        return out

    def jvp(self, vector: Tensor) -> Tensor:
        """``J v``: shape of ``outputs``, for a flat parameter-space ``vector``."""
        vs = [v.to(p.dtype) for v, p in zip(self.unflatten(vector), self.params, strict=True)]
        used = [(g, v) for g, v in zip(self._jt_u, vs, strict=True) if g.requires_grad]
        if not used:
            return torch.zeros_like(self.outputs)
        (jv,) = torch.autograd.grad(
            [g for g, _ in used], self._u, [v for _, v in used], retain_graph=True
        )
        return jv

    def jacobian(self) -> Tensor:
        """The dense Jacobian ``J``, shape ``(outputs.numel(), dim)``, in the parameters' dtype.

        Row ``k`` is the derivative of the ``k``-th entry of ``outputs`` (flattened in
        C order) with respect to the flat parameter vector. Formed from ``dim``
        Jacobian-vector products in one vectorized reverse pass
        (``is_grads_batched``); where an operation has no batching rule, one product
        per parameter entry. Memory: ``outputs.numel() * dim`` entries, so this is for
        small models (the exact solve of :class:`~geometry_misalignment.optim.
        WassersteinNaturalGradient`) and tests.
        """
        dtype = self.params[0].dtype
        eye = torch.eye(self.dim, dtype=dtype, device=self.outputs.device)
        cols, i = [], 0
        for p in self.params:
            cols.append(eye[:, i : i + p.numel()].reshape(self.dim, *p.shape).to(p.dtype))
            i += p.numel()
        used = [(g, v) for g, v in zip(self._jt_u, cols, strict=True) if g.requires_grad]
        if not used:
            return torch.zeros(
                self.outputs.numel(), self.dim, dtype=dtype, device=self.outputs.device
            )
        try:
            (jb,) = torch.autograd.grad(
                [g for g, _ in used],
                self._u,
                [v for _, v in used],
                retain_graph=True,
                is_grads_batched=True,
            )
        except RuntimeError:  # an op without a batching rule: one product per column
            jb = torch.stack([self.jvp(e) for e in eye])
        return jb.reshape(self.dim, -1).T

    def dense(self) -> Tensor:
        """The dense ``G = J^T J / n``, shape ``(dim, dim)``, float64 (see :meth:`jacobian`)."""
        J = self.jacobian().to(torch.float64)
        return J.T @ J / self.n

    def matvec(self, vector: Tensor) -> Tensor:
        """``G v`` for a flat ``vector`` (length :attr:`dim`); returns a flat tensor."""
        self.calls += 1
        jv = self.jvp(vector)
        gv = torch.autograd.grad(
            self.outputs, self.params, jv / self.n, retain_graph=True, allow_unused=True
        )
        return self.flatten(
            [torch.zeros_like(p) if g is None else g for g, p in zip(gv, self.params, strict=True)]
        ).to(vector.dtype)


def metric_matrix(outputs: Tensor, params: Sequence[Tensor]) -> Tensor:
    """The dense G (``dim x dim``, float64), from ``dim`` products: for small models and tests.

    Args:
        outputs: ``T_theta(x)``, shape ``(n, ...)``, with its autograd graph to ``params``.
        params: The parameters G is taken over (a sequence, not a single tensor).

    Returns:
        ``G`` of shape ``(dim, dim)``, float64, with ``dim`` the total number of
        trainable parameter entries, on ``outputs.device``.

    Raises:
        TypeError, ValueError: As :class:`MetricOperator`.
    """
    op = MetricOperator(outputs, params)
    eye = torch.eye(op.dim, dtype=torch.float64, device=outputs.device)
    return torch.stack([op.matvec(e) for e in eye], dim=1)


def lanczos_extremes(
    matvec: Callable[[Tensor], Tensor],
    dim: int,
    n_iter: int = 20,
    *,
    rtol: float = 1e-10,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
) -> tuple[float, float]:
    """Largest and smallest nonzero eigenvalue of a PSD operator by Lanczos.

    Full reorthogonalization, float64, random start. Ritz values lie inside the
    spectrum, so ``lmax`` is a lower bound of the largest and ``lmin`` an upper bound
    of the smallest eigenvalue: for a nonsingular operator the estimated ratio never
    exceeds the true one. With a null space, an unconverged Ritz value can lie between
    0 and the smallest nonzero eigenvalue (above ``rtol * lmax``), and the ratio can
    then exceed the true one on the range. With as many iterations as distinct
    eigenvalues (or ``dim``) it is exact.

    Args:
        matvec: ``v -> A v`` for float64 vectors of length ``dim``.
        dim: Dimension of the operator, >= 1.
        n_iter: Lanczos steps (capped at ``dim``), >= 1.
        rtol: Ritz values below ``rtol * lmax`` count as the null space.
        generator: Torch generator for the start vector (reproducible estimates).
        device: Device of the vectors.

    Returns:
        ``(lmax, lmin)``; ``(0.0, 0.0)`` for the zero operator.

    Raises:
        TypeError, ValueError: On a non-integer or non-positive ``dim`` or ``n_iter``,
            a negative ``rtol``, or a ``matvec`` whose result is not of shape ``(dim,)``.
    """
    dim = check_int("dim", dim, low=1)
    n_iter = min(check_int("n_iter", n_iter, low=1), dim)
    rtol = check_float("rtol", rtol, low=0.0)
    q = torch.randn(dim, dtype=torch.float64, generator=generator, device="cpu").to(device)
    q = q / q.norm()
    basis = [q]
    alphas: list[float] = []
    betas: list[float] = []
    for k in range(n_iter):
        w = matvec(basis[-1])
        if not isinstance(w, Tensor) or w.shape != (dim,):
            got = tuple(w.shape) if isinstance(w, Tensor) else type(w).__name__
            raise ValueError(f"matvec must return a vector of shape ({dim},) (dim), got {got}")
        w = w.to(torch.float64)
        alpha = float(w @ basis[-1])
        alphas.append(alpha)
        Q = torch.stack(basis, dim=1)
        for _ in range(2):  # full reorthogonalization, twice for stability
            w = w - Q @ (Q.T @ w)
        beta = float(w.norm())
        scale = max(abs(a) for a in alphas) or 1.0
        if k == n_iter - 1 or beta <= 1e-12 * scale:
            break
        betas.append(beta)
        basis.append(w / beta)
    m = len(alphas)
    T = torch.diag(torch.tensor(alphas, dtype=torch.float64))
    if m > 1:
        off = torch.tensor(betas[: m - 1], dtype=torch.float64)
        T = T + torch.diag(off, 1) + torch.diag(off, -1)
    ritz = torch.linalg.eigvalsh(T)
    lmax = float(ritz.max())
    if lmax <= 0:
        return 0.0, 0.0
    nonzero = ritz[ritz > rtol * lmax]
    return lmax, float(nonzero.min())


def misalignment(
    model: Callable[[Tensor], Tensor] | nn.Module,
    x: Tensor,
    n_iter: int = 20,
    *,
    params: Sequence[Tensor] | None = None,
    rtol: float = 1e-10,
    seed: int = 0,
) -> float:
    """Geometry-misalignment ``kappa = lambda_max(G) / lambda_min+(G)`` of a push-forward.

    Args:
        model: The map ``T_theta``; ``model(x)`` has shape ``(n, ...)``.
        x: Source samples, shape ``(n, ...)``, n >= 1, finite.
        n_iter: Lanczos iterations, >= 2 (more is more exact; exact once it reaches
            the number of distinct eigenvalues of G; capped at the parameter count).
        params: Parameters G is taken over; default ``model.parameters()``.
        rtol: Relative size below which an eigenvalue counts as null space.
        seed: Seed of the Lanczos start vector.

    Returns:
        ``kappa >= 1`` (a float; ``inf`` if G is zero).

    Raises:
        TypeError, ValueError: On a non-tensor, empty or non-finite ``x``, a model
            that is not callable, a non-integer ``seed``, ``n_iter`` below 2, a model
            without trainable parameters, ``params`` given as a single tensor, or
            outputs that do not depend on ``params``. Errors of ``model(x)`` itself (a wrong
            input shape or dtype) come from the model (torch's ``RuntimeError``).
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() == 0 or x.shape[0] == 0:
        raise ValueError(f"x must have a non-empty sample dimension, got {tuple(x.shape)}")
    if x.is_floating_point() and not bool(torch.isfinite(x).all()):
        raise ValueError("x contains NaN or inf")
    if not callable(model):
        raise TypeError(f"model must be callable (the map T_theta), got {type(model).__name__}")
    seed = check_int("seed", seed)
    # one Lanczos step gives one Ritz value, so lmax = lmin and kappa = 1 for any G
    n_iter = check_int("n_iter", n_iter, low=2)
    if isinstance(params, Tensor):
        raise TypeError("params must be a sequence of tensors, not a single tensor: pass [p]")
    if params is None:
        if not isinstance(model, nn.Module):
            raise TypeError("params is required when model is not an nn.Module")
        params = list(model.parameters())
    with torch.enable_grad():
        op = MetricOperator(model(x), list(params))
        gen = torch.Generator().manual_seed(seed)
        lmax, lmin = lanczos_extremes(
            op.matvec, op.dim, n_iter, rtol=rtol, generator=gen, device=x.device
        )
    return float("inf") if lmin <= 0 else lmax / lmin
