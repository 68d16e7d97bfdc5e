"""Proximal multi-block ADMM with one multiplier and one penalty per block row.

Problem::

    min_x  sum_{i=0}^{m-1} f_i(x_i)   s.t.  sum_j A_kj x_j = b_k,  k = 0..p-1,

with ``A`` block anti-upper triangular (:class:`~prox_admm.matrix.BlockMatrix`). With
``r_k(x) = sum_j A_kj x_j - b_k``, the augmented Lagrangian keeps the rows apart::

    L(x, lam) = sum_i f_i(x_i) + sum_k <lam_k, r_k(x)> + sum_k (rho_k / 2) ||r_k(x)||^2.

One iteration is a Gauss-Seidel sweep over the blocks followed by dual ascent per row::

    x_i <- argmin_{x_i} L(x_0^+, ..., x_{i-1}^+, x_i, ..., lam) + 0.5 ||x_i - x_i^t||_{P_i}^2
    lam_k <- lam_k + beta rho_k r_k(x^+)

Because row k involves no block after its anti-diagonal block ``a(k) = m - 1 - k``,
updating ``lam_k`` right after ``x_{a(k)}`` or at the end of the sweep gives the same
iterates (the later blocks never read ``lam_k``).

Subproblem solvers, chosen per block from ``prox_terms`` and what the :class:`Block` has:

- ``"quad"``: quadratic f, ``P_i = tau I`` or a matrix: one linear solve with
  ``K = Q + H_i + P_i`` (``H_i = sum_k rho_k A_ki^T A_ki``), factorized once;
- ``"prox"``: ``H_i + P_i = mu I`` (e.g. identity blocks): ``x = prox_{f/mu}(x^t - g/mu)``
  with ``g`` the gradient of the coupling terms at ``x^t``: exact;
- ``"linearized"``: ``P_i = tau_i I - H_i`` (``tau_i >= ||H_i||``): the same prox step
  with ``tau_i`` (or a gradient step ``x^t - (grad f + g) / tau_i`` for a smooth block
  without prox);
- ``"solve"``: the user's exact solver of ``f(x) + 0.5 x^T M x + c^T x``.

References:
    The paper (ICML 2026): proximal ADMM for block anti-upper
    triangular constraints (abstract only; the algorithm details here are ours).
    Boyd et al. (2011), *Distributed optimization and statistical learning via ADMM*
    (residuals, stopping). Chen, He, Ye & Yuan (2016), *The direct extension of ADMM for
    multi-block convex minimization problems is not necessarily convergent*.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from icml26_core.validation import check_float, check_int

from prox_admm._ops import SMALL, is_scaled_identity, sym_extreme_eigs
from prox_admm.blocks import Block, Subproblem
from prox_admm.matrix import BlockMatrix

Array = np.ndarray


@dataclass(frozen=True)
class Linearized:
    """Linearized proximal term ``P_i = tau I - sum_k rho_k A_ki^T A_ki`` for one block.

    Args:
        tau: The step parameter; None picks ``1.01 ||H_i||`` for a prox block and
            ``L_i + ||H_i||`` for a gradient step (L_i: the block's ``lipschitz``).
    """

    tau: float | None = None


@dataclass
class ADMMResult:
    """What :meth:`ProximalADMM.solve` returns.

    Attributes:
        x: The blocks ``x_i``, each shape ``(d_i,)``.
        lam: The multipliers ``lam_k``, each shape ``(n_k,)``.
        history: One entry per iteration (arrays): ``primal`` (``||r(x)||_2`` over all
            rows), ``dual`` (``||s||_2``, s the stationarity residual ``xi_i + sum_k
            A_ki^T lam_k`` with ``xi_i`` in the subdifferential of f_i at x_i),
            ``kkt`` (max of the two), ``objective`` (``sum_i f_i``; NaN if an f is not
            given), ``lagrangian`` (``L(x^t, lam^t)``), ``step_sq`` (``||x_i^t -
            x_i^{t-1}||^2`` per block, shape ``(T, m)``), ``time`` (seconds since start).
        converged: Whether ``primal <= tol`` and ``dual <= tol`` were reached.
        diverged: Whether the iterates blew up (non-finite or KKT > 1e50).
        n_iter: Iterations run.
        modes: The subproblem solver used for each block.
        taus: The proximal parameter of each block (0 where none).
    """

    x: list[Array]
    lam: list[Array]
    history: dict[str, Array]
    converged: bool
    diverged: bool
    n_iter: int
    modes: list[str] = field(default_factory=list)
    taus: list[float] = field(default_factory=list)

    @property
    def kkt(self) -> float:
        """Final KKT residual (inf if no iteration ran)."""
        h = self.history.get("kkt")
        return float(h[-1]) if h is not None and h.size else float("inf")

    @property
    def objective(self) -> float:
        """Final objective ``sum_i f_i(x_i)``."""
        h = self.history.get("objective")
        return float(h[-1]) if h is not None and h.size else float("nan")


def _split(v: Any, sizes: Sequence[int], name: str) -> list[Array]:
    """Accept a list of per-block arrays or one concatenated array."""
    if isinstance(v, list | tuple):
        if len(v) != len(sizes):
            raise ValueError(f"{name} must have {len(sizes)} parts, got {len(v)}")
        out = [np.asarray(p, dtype=np.float64).ravel().copy() for p in v]
        for i, (p, s) in enumerate(zip(out, sizes, strict=True)):
            if p.shape != (s,):
                raise ValueError(f"{name}[{i}] must have shape ({s},), got {p.shape}")
    else:
        arr = np.asarray(v, dtype=np.float64).ravel()
        if arr.size != sum(sizes):
            raise ValueError(
                f"{name} must have length {sum(sizes)} (or be a list of {len(sizes)} parts), got "
                f"{arr.size}"
            )
        out = [p.copy() for p in np.split(arr, np.cumsum(sizes)[:-1])]
    for i, p in enumerate(out):
        if not np.all(np.isfinite(p)):
            raise ValueError(f"{name}[{i}] holds NaN or inf")
    return out


class _BlockState:
    """Per-block precomputation: mode, proximal matrix, factorization."""

    def __init__(self, i: int, block: Block, A: BlockMatrix, rho: list[float], spec: Any) -> None:
        self.i = i
        self.block = block
        self.d = d = A.col_sizes[i]
        self.rows = A.rows_of[i]
        self.ops = [(k, A.ops[(k, i)], rho[k]) for k in self.rows]
        formable = all(op.formable for _, op, _ in self.ops)
        H: Any = None
        if formable:
            parts = [r * op.gram() for _, op, r in self.ops]
            if any(sp.issparse(p) for p in parts):
                H = sp.csr_array(sum(sp.csr_array(p) for p in parts))
            else:
                H = sum(parts)
        self.H = H
        self.H_norm = (
            sym_extreme_eigs(H, d)[1]
            if H is not None
            else sum(r * op.norm() ** 2 for _, op, r in self.ops)
        )
        self.P: Any = None  # proximal matrix (None: zero), used by quad/solve/prox
        self.tau = 0.0
        self.mode = self._resolve(spec)

    # ---------------------------------------------------------------- setup
    def _err(self, msg: str) -> ValueError:
        nm = f" ({self.block.name})" if self.block.name else ""
        return ValueError(f"block {self.i}{nm}: {msg}")

    def _resolve(self, spec: Any) -> str:
        b, d = self.block, self.d
        if isinstance(spec, str):
            if spec != "linearized":
                raise ValueError(
                    f"prox_terms[{self.i}] must be 'linearized', a float, a matrix, Linearized or "
                    f"None; got {spec!r}"
                )
            spec = Linearized()
        if isinstance(spec, Linearized):
            return self._linearized(spec.tau)
        if spec is None:
            if b.is_quadratic:
                return self._exact(None)
            if b.solve is not None:
                return self._exact(None)
            if b.prox is not None:
                if self.H is not None and is_scaled_identity(self.H, d) is not None:
                    return self._exact(None)
                return self._linearized(None)
            return self._linearized(None)
        if isinstance(spec, bool):
            raise TypeError(
                f"prox_terms[{self.i}] must be a float, a matrix, 'linearized' or None, got a bool"
            )
        if np.isscalar(spec):
            tau = check_float(f"prox_terms[{self.i}]", spec, low=0.0)
            return self._exact(tau)
        P = spec.toarray() if sp.issparse(spec) else np.asarray(spec, dtype=np.float64)
        if P.shape != (d, d):
            raise ValueError(
                f"prox_terms[{self.i}] (P_{self.i}) must have shape ({d}, {d}), got {P.shape}"
            )
        if not np.all(np.isfinite(P)):
            raise ValueError(f"prox_terms[{self.i}] (P_{self.i}) holds NaN or inf")
        if not np.allclose(P, P.T, atol=1e-12 * max(1.0, float(np.abs(P).max()))):
            raise ValueError(f"prox_terms[{self.i}] (P_{self.i}) must be symmetric")
        lo = float(np.linalg.eigvalsh(P)[0])
        if lo < -1e-10 * max(1.0, float(np.abs(P).max())):
            raise ValueError(
                f"prox_terms[{self.i}] (P_{self.i}) must be positive semidefinite; its smallest "
                f"eigenvalue is {lo:.3g}"
            )
        return self._exact(P)

    def _linearized(self, tau: float | None) -> str:
        b = self.block
        if b.prox is not None:
            t = (
                1.01 * self.H_norm + 1e-12
                if tau is None
                else check_float(f"tau of block {self.i}", tau, low=0.0, low_inclusive=False)
            )
            if t < self.H_norm * (1 - 1e-9):
                raise self._err(
                    "a linearized proximal term needs tau >= ||sum_k rho_k A_ki^T A_ki|| = "
                    f"{self.H_norm:.4g} "
                    f"(else P_i = tau I - H_i is not positive semidefinite); got tau = {t:.4g}"
                )
            self.tau = t
            return "linearized"
        if b.grad is None:
            raise self._err("needs a prox, a grad, a solve or a quadratic Q for its subproblem")
        if tau is None:
            if b.lipschitz is None:
                raise self._err(
                    "a gradient step needs the block's lipschitz constant (or give tau)"
                )
            tau = b.lipschitz + self.H_norm
        self.tau = check_float(f"tau of block {self.i}", tau, low=0.0, low_inclusive=False)
        return "gradient"

    def _exact(self, P: Any) -> str:
        b, d = self.block, self.d
        if P is None or (np.isscalar(P) and float(P) == 0.0):
            self.P, self.tau = None, 0.0
        elif np.isscalar(P):
            self.tau = float(P)
            self.P = self.tau * (np.eye(d) if d <= SMALL else sp.eye_array(d, format="csr"))
        else:
            self.P = P
            self.tau = float(np.linalg.eigvalsh(P)[-1])
        if b.is_quadratic:
            if self.H is None:
                raise self._err(
                    "a quadratic block with LinearOperator constraints needs "
                    "prox_terms='linearized'"
                )
            K = b.Q + self.H
            if self.P is not None:
                K = K + self.P
            self._factor(K)
            return "quad"
        if b.solve is not None:
            return "solve"
        if b.prox is not None:
            M = self.H if self.P is None else (self.H + self.P if self.H is not None else None)
            mu = None if M is None else is_scaled_identity(M, d)
            if mu is None or mu <= 0:
                raise self._err(
                    "its subproblem is not a prox step (sum_k rho_k A_ki^T A_ki + P_i is not a "
                    "positive "
                    "multiple of I); use prox_terms='linearized' for this block, or give "
                    "Block(solve=...)"
                )
            self.mu = float(mu)
            return "prox"
        raise self._err(
            "has only a gradient; use prox_terms='linearized' (a gradient step) or give solve"
        )

    def _factor(self, K: Any) -> None:
        d = self.d
        if sp.issparse(K) and d > SMALL:
            K = sp.csc_array(K)
            try:  # symmetric ordering: K is symmetric positive (semi)definite
                lu = spla.splu(
                    K,
                    permc_spec="MMD_AT_PLUS_A",
                    diag_pivot_thresh=0.0,
                    options={"SymmetricMode": True},
                )
            except RuntimeError as e:
                raise self._err(
                    "its subproblem matrix Q + H + P is singular; add a proximal term"
                ) from e
            self._solve = lu.solve
            return
        Kd = K.toarray() if sp.issparse(K) else np.asarray(K, dtype=np.float64)
        c, info = sla.lapack.dpotrf(Kd, lower=1)
        diag = np.abs(np.diag(c)) if info == 0 else np.zeros(1)
        if info != 0 or diag.min() ** 2 <= 1e-13 * max(diag.max() ** 2, 1e-300):
            raise self._err(
                "its subproblem is not strictly convex (Q + sum_k rho_k A_ki^T A_ki + P_i is not "
                "positive definite); add a proximal term (prox_terms) or a full-column-rank A_ki"
            )
        potrs = sla.lapack.dpotrs

        def solve(r: Array) -> Array:
            return potrs(c, r, lower=1)[0]

        self._solve = solve

    # ---------------------------------------------------------------- update
    def M_mv(self, x: Array) -> Array:
        out = np.zeros(self.d) if self.H is None else np.asarray(self.H @ x)
        if self.H is None:
            for _, op, r in self.ops:
                out = out + r * op.rmv(op.mv(x))
        if self.P is not None:
            out = out + np.asarray(self.P @ x)
        return out

    def update(self, x: Array, g: Array) -> tuple[Array, Array | None]:
        """New block value from ``x`` (current) and ``g`` (coupling gradient at x).

        Returns ``(x_new, xi)`` with ``xi`` a subgradient of f at ``x_new`` (None: use grad).
        """
        b = self.block
        if self.mode == "quad":
            xn = x - self._solve(b.Q @ x + b.q + g)
            return xn, None
        if self.mode == "prox":
            xn = np.asarray(b.prox(x - g / self.mu, 1.0 / self.mu), dtype=np.float64)
            return xn, self.mu * (x - xn) - g
        if self.mode == "linearized":
            xn = np.asarray(b.prox(x - g / self.tau, 1.0 / self.tau), dtype=np.float64)
            return xn, self.tau * (x - xn) - g
        if self.mode == "gradient":
            return x - (b.grad(x) + g) / self.tau, None
        M = self.H if self.P is None else (None if self.H is None else self.H + self.P)
        sub = Subproblem(x_k=x.copy(), c=g - self.M_mv(x), matvec=self.M_mv, M=M)
        xn = np.asarray(b.solve(sub), dtype=np.float64).ravel()
        if xn.shape != (self.d,):
            raise ValueError(
                f"block {self.i}: solve returned shape {xn.shape}, expected ({self.d},)"
            )
        return xn, -(self.M_mv(xn - x) + g)


class ProximalADMM:
    """Proximal multi-block ADMM for block anti-upper triangular constraints.

    Solves ``min sum_i f_i(x_i)`` s.t. ``sum_j A_kj x_j = b_k`` for every block row k,
    with a Gauss-Seidel sweep over the blocks (each subproblem the augmented Lagrangian
    in ``x_i`` plus ``0.5 ||x_i - x_i^t||^2_{P_i}``) and a dual ascent step per row with
    its own penalty ``rho_k``. See the module docstring for the iteration and the
    subproblem solvers, and :func:`prox_admm.theory.descent_certificate` for the
    parameter condition under which the merit function decreases (nonconvex f_i).

    Args:
        blocks: One :class:`~prox_admm.blocks.Block` per variable block, m of them.
        A: The constraint matrix (:class:`~prox_admm.matrix.BlockMatrix`), p rows.
        b: Right-hand sides: a list of p arrays (shapes ``(n_k,)``) or one array of
            length ``sum_k n_k``.
        rho: Penalty, > 0: one float for every row or a sequence of p floats.
        prox_terms: Proximal terms P_i: None (per block: none where the subproblem is
            solved exactly, linearized where it is not), ``"linearized"``, a float
            ``tau`` (``P_i = tau I``), a ``(d_i, d_i)`` positive semidefinite matrix,
            :class:`Linearized`, or a sequence of these, one per block.
        max_iter: Most iterations, >= 1.
        tol: Stop when the primal and the dual residual are both <= tol (absolute).
        dual_step: Dual step ``beta`` in ``(0, 2)`` (1 is the standard ADMM step).
        record_objective: Evaluate ``sum_i f_i`` and ``L`` at every iteration.

    Raises:
        ValueError: On mismatched shapes (blocks vs A, b), ``rho <= 0``, a proximal
            matrix that is not PSD, a block whose subproblem cannot be solved as asked,
            NaN/inf in the data.
        TypeError: On arguments of the wrong kind.

    Example:
        >>> import numpy as np
        >>> from prox_admm import BlockMatrix, ProximalADMM, quadratic
        >>> A = BlockMatrix({(0, 0): np.eye(2), (0, 1): -np.eye(2)}, ([2], [2, 2]))
        >>> blocks = [quadratic(np.eye(2), [-1.0, 0.0]), quadratic(np.eye(2), [0.0, -1.0])]
        >>> res = ProximalADMM(blocks, A, np.zeros(2), rho=1.0, tol=1e-10).solve()
        >>> res.converged, np.round(res.x[0], 6)
        (True, array([0.5, 0.5]))
    """

    def __init__(
        self,
        blocks: Sequence[Block],
        A: BlockMatrix,
        b: Any,
        rho: float | Sequence[float] = 1.0,
        prox_terms: Any = None,
        max_iter: int = 1000,
        tol: float = 1e-6,
        dual_step: float = 1.0,
        record_objective: bool = True,
    ) -> None:
        if not isinstance(A, BlockMatrix):
            raise TypeError(f"A must be a BlockMatrix, got {type(A).__name__}")
        blocks = list(blocks)
        for i, blk in enumerate(blocks):
            if not isinstance(blk, Block):
                raise TypeError(f"blocks[{i}] must be a Block, got {type(blk).__name__}")
        if len(blocks) != A.n_blocks:
            raise ValueError(
                f"A has {A.n_blocks} block columns but {len(blocks)} blocks were given"
            )
        for i, blk in enumerate(blocks):
            if blk.is_quadratic and blk.Q.shape[0] != A.col_sizes[i]:
                raise ValueError(
                    f"block {i} is a quadratic of dimension {blk.Q.shape[0]}, but A's block "
                    f"column {i} has {A.col_sizes[i]}"
                )
        self.blocks, self.A = blocks, A
        self.b = _split(b, A.row_sizes, "b")
        p = A.n_rows
        if isinstance(rho, np.ndarray) and rho.ndim == 1:
            rho = rho.tolist()
        if isinstance(rho, Sequence) and not isinstance(rho, str):
            if len(rho) != p:
                raise ValueError(
                    f"rho must be one float or {p} floats (one per row), got {len(rho)}"
                )
            self.rho = [
                check_float(f"rho[{k}]", r, low=0.0, low_inclusive=False) for k, r in enumerate(rho)
            ]
        else:
            r = check_float("rho", rho, low=0.0, low_inclusive=False)
            self.rho = [r] * p
        self.max_iter = check_int("max_iter", max_iter, low=1)
        self.tol = check_float("tol", tol, low=0.0)
        self.dual_step = check_float(
            "dual_step", dual_step, low=0.0, high=2.0, low_inclusive=False, high_inclusive=False
        )
        self.record_objective = bool(record_objective)
        m = A.n_blocks
        if isinstance(prox_terms, list | tuple):
            if len(prox_terms) != m:
                raise ValueError(
                    f"prox_terms must be one spec or {m} specs (one per block), got "
                    f"{len(prox_terms)}"
                )
            specs = list(prox_terms)
        else:
            specs = [prox_terms] * m
        self._states = [_BlockState(i, blk, A, self.rho, specs[i]) for i, blk in enumerate(blocks)]

    @property
    def modes(self) -> list[str]:
        """The subproblem solver of each block.

        One of ``quad``, ``prox``, ``linearized``, ``gradient``, ``solve``.
        """
        return [s.mode for s in self._states]

    @property
    def taus(self) -> list[float]:
        """Proximal parameter of each block (tau of tau I or of the linearization; 0: none)."""
        return [s.tau for s in self._states]

    def lagrangian(self, x: Sequence[Array], lam: Sequence[Array]) -> float:
        """``L(x, lam) = sum f_i + sum_k <lam_k, r_k> + sum_k rho_k/2 ||r_k||^2``."""
        r = self.A.residuals(x, self.b)
        val = sum(blk.value(xi) for blk, xi in zip(self.blocks, x, strict=True))
        return float(
            val
            + sum(lk @ rk + 0.5 * rh * rk @ rk for lk, rk, rh in zip(lam, r, self.rho, strict=True))
        )

    def step(self, x: Sequence[Array], lam: Sequence[Array]) -> tuple[list[Array], list[Array]]:
        """One iteration (sweep over the blocks, then the dual steps) from ``(x, lam)``.

        Args:
            x: The m blocks.
            lam: The p multipliers.

        Returns:
            ``(x_new, lam_new)``; the inputs are not modified.
        """
        x = [np.asarray(v, dtype=np.float64).copy() for v in x]
        lam = [np.asarray(v, dtype=np.float64).copy() for v in lam]
        r = self.A.residuals(x, self.b)
        for i, st in enumerate(self._states):
            g = np.zeros(st.d)
            for k, op, rk in st.ops:
                g += op.rmv(lam[k] + rk * r[k])
            xn, _ = st.update(x[i], g)
            for k, op, _ in st.ops:
                r[k] = r[k] + op.mv(xn - x[i])
            x[i] = xn
        for k in range(self.A.n_rows):
            lam[k] = lam[k] + self.dual_step * self.rho[k] * r[k]
        return x, lam

    def solve(
        self,
        x0: Any = None,
        lam0: Any = None,
        *,
        callback: Callable[[int, list[Array], list[Array], dict[str, float]], bool | None]
        | None = None,
    ) -> ADMMResult:
        """Run the iteration from ``(x0, lam0)`` (zeros if None).

        Args:
            x0: Starting blocks: a list of m arrays or one concatenated array.
            lam0: Starting multipliers: a list of p arrays or one concatenated array.
            callback: ``callback(t, x, lam, info)`` after each iteration (``info``:
                primal, dual, kkt); return True to stop.

        Returns:
            The :class:`ADMMResult`.

        Raises:
            ValueError: If ``x0`` or ``lam0`` has the wrong size or holds NaN/inf.
        """
        A, m, p = self.A, self.A.n_blocks, self.A.n_rows
        x = [np.zeros(d) for d in A.col_sizes] if x0 is None else _split(x0, A.col_sizes, "x0")
        lam = (
            [np.zeros(n) for n in A.row_sizes]
            if lam0 is None
            else _split(lam0, A.row_sizes, "lam0")
        )
        r = A.residuals(x, self.b)
        rho, beta = self.rho, self.dual_step
        keys = ("primal", "dual", "kkt", "objective", "lagrangian", "time")
        hist: dict[str, list[Any]] = {k: [] for k in keys}
        hist["step_sq"] = []
        t0 = time.perf_counter()
        converged = diverged = False
        it = 0
        for it in range(1, self.max_iter + 1):
            xis: list[Array | None] = [None] * m
            steps = np.zeros(m)
            for i, st in enumerate(self._states):
                g = np.zeros(st.d)
                for k, op, rk in st.ops:
                    g += op.rmv(lam[k] + rk * r[k])
                xn, xi = st.update(x[i], g)
                delta = xn - x[i]
                for k, op, _ in st.ops:
                    r[k] = r[k] + op.mv(delta)
                x[i] = xn
                xis[i] = xi
                steps[i] = float(delta @ delta)
            for k in range(p):
                lam[k] = lam[k] + beta * rho[k] * r[k]
            s2 = 0.0
            for i, st in enumerate(self._states):
                blk = st.block
                xi = blk.grad(x[i]) if (blk.grad is not None) else xis[i]
                si = np.array(xi, dtype=np.float64, copy=True)
                for k, op, _ in st.ops:
                    si += op.rmv(lam[k])
                s2 += float(si @ si)
            primal = float(np.sqrt(sum(float(rk @ rk) for rk in r)))
            dual = float(np.sqrt(s2))
            kkt = max(primal, dual)
            hist["primal"].append(primal)
            hist["dual"].append(dual)
            hist["kkt"].append(kkt)
            hist["step_sq"].append(steps)
            if self.record_objective:
                obj = float(sum(blk.value(xv) for blk, xv in zip(self.blocks, x, strict=True)))
                lag = obj + sum(
                    float(lk @ rk + 0.5 * rh * rk @ rk)
                    for lk, rk, rh in zip(lam, r, rho, strict=True)
                )
            else:
                obj = lag = float("nan")
            hist["objective"].append(obj)
            hist["lagrangian"].append(lag)
            hist["time"].append(time.perf_counter() - t0)
            if not np.isfinite(kkt) or kkt > 1e50:
                diverged = True
                break
            if primal <= self.tol and dual <= self.tol:
                converged = True
                break
            if callback is not None and callback(
                it, x, lam, {"primal": primal, "dual": dual, "kkt": kkt}
            ):
                break
        history = {k: np.asarray(v, dtype=np.float64) for k, v in hist.items()}
        if history["step_sq"].size == 0:
            history["step_sq"] = np.zeros((0, m))
        return ADMMResult(x, lam, history, converged, diverged, it, self.modes, self.taus)


def kkt_residual(
    blocks: Sequence[Block], A: BlockMatrix, b: Any, x: Any, lam: Any
) -> dict[str, float]:
    """KKT residuals of ``(x, lam)``, computed from the blocks alone (independent of a run).

    Primal: ``||A x - b||_2``. Stationarity of block i: ``||grad f_i(x_i) + sum_k
    A_ki^T lam_k||`` for a block with ``grad``; for a prox block the prox residual
    ``||x_i - prox_{f_i}(x_i - sum_k A_ki^T lam_k, t)|| / t`` with ``t = 1e-3`` (zero
    exactly at stationary points of weakly convex f with curvature > -1/t).

    Returns:
        ``{"primal", "dual", "kkt"}`` (floats; ``dual`` the 2-norm over blocks).
    """
    xs = _split(x, A.col_sizes, "x")
    ls = _split(lam, A.row_sizes, "lam")
    bs = _split(b, A.row_sizes, "b")
    r = A.residuals(xs, bs)
    primal = float(np.sqrt(sum(float(v @ v) for v in r)))
    s2 = 0.0
    for i, blk in enumerate(blocks):
        at = np.zeros(A.col_sizes[i])
        for k in A.rows_of[i]:
            at += A.ops[(k, i)].rmv(ls[k])
        if blk.grad is not None:
            s = blk.grad(xs[i]) + at
        elif blk.prox is not None:
            t = 1e-3
            s = (xs[i] - blk.prox(xs[i] - t * at, t)) / t
        else:
            raise ValueError(
                f"block {i} has neither grad nor prox; its stationarity cannot be measured"
            )
        s2 += float(s @ s)
    dual = float(np.sqrt(s2))
    return {"primal": primal, "dual": dual, "kkt": max(primal, dual)}
