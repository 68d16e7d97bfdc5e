r"""Our assumption, its numerical check, and the parameter condition it gives.

The abstract does not state the paper's new assumption; what follows is **ours**, in its
spirit (conditions on each block row, none on the whole matrix), and every statement is
checked numerically in the tests and the experiment, not taken from the paper.

**Assumption (R + S), ours.** For every block row k with anti-diagonal block
``j = a(k) = m - 1 - k``:

- (R) range: ``range(A_kl) ⊆ range(A_kj)`` for every block l of the row, and
  ``b_k ∈ range(A_kj)`` (implied by full row rank of A_kj); let ``sigma_k`` be the
  smallest nonzero singular value of A_kj;
- (S) smoothness: f_j is differentiable with an L_j-Lipschitz gradient.

No condition is put on the whole matrix: it may lack full column rank (any split with
more variables than constraints, e.g. consensus ``x_i - z = 0``), which is where
whole-matrix analyses stop. The non-anti-diagonal blocks may be nonsmooth and nonconvex
(weakly convex with curvature ``-w_i``, e.g. MCP, SCAD).

**Why it suffices (our derivation).** Row k involves no block after a(k), so the
optimality condition of the x_j-subproblem, ``j = a(k)``, contains ``lam_k^+`` through
``A_kj^T lam_k^+`` and, for the earlier rows k' < k that also involve x_j, the terms
``A_k'j^T (lam_k'^+ - rho_k' sum_{l > j} A_k'l dx_l)``. Differencing the condition at two
consecutive iterations and using (R) (so ``||dlam_k|| <= ||A_kj^T dlam_k|| / sigma_k``)
and (S) gives, by induction over k = 0, 1, ...,

    ||lam_k^{t+1} - lam_k^t|| <= sum_i alpha_ki ||dx_i^{t+1}|| + beta_ki ||dx_i^t||

with nonnegative constants computed by :func:`descent_certificate` from ``L_j``, ``sigma_k``,
``||P_j||``, the norms ``||A_kl||`` and ``rho``. Each block update lowers L by at least
``d_i ||dx_i||^2`` (``d_i = (lambda_min(P_i) + max(mu_i, 0)) / 2`` for an exact update,
``mu_i`` the strong-convexity modulus of the subproblem; ``tau_i - (L_i + ||H_i||)/2``
for a gradient step), the dual step raises it by ``sum_k ||dlam_k||^2 / rho_k``. With
``N_k`` the number of nonzero constants of row k (Cauchy-Schwarz), the merit

    Phi^t = L(x^t, lam^t) + sum_i gamma_i ||x_i^t - x_i^{t-1}||^2,
    gamma_i = sum_k (N_k / rho_k) beta_ki^2,

satisfies ``Phi^{t+1} <= Phi^t - sum_i c_i ||dx_i^{t+1}||^2`` for t >= 1, with

    c_i = d_i - sum_k (N_k / rho_k) (alpha_ki^2 + beta_ki^2).

**Sufficient condition (documented, ours):** dual step 1 and ``c_i > 0`` for every block.
Then ``sum_t ||dx^t||^2 < inf`` whenever Phi is bounded below (as for coercive f_i),
so ``dx -> 0``, ``dlam -> 0`` and the residuals -> 0: every limit point is a KKT point
(the standard argument, e.g. Wang, Yin & Zeng 2019). For consensus-type rows (identity
anti-diagonal blocks, exact updates, no proximal term on them) the condition reads
``rho_k > sqrt(2) L_j`` roughly, and ``sum_k rho_k > w_0`` for the shared weakly convex
block. :func:`suggest_rho` finds the smallest penalty on a grid that satisfies it.

**Convex problems outside (R + S).** For quadratic problems (every f_i quadratic, exact
or linearized updates) the iteration is affine and converges iff the spectral radius of
its linear part is < 1 (eigenvalues at 1 belong to non-unique solutions):
:func:`iteration_spectral_radius` computes it. As a generic rule for the proximal
parameter we use ``tau_i = rho (m_i - 1) ||A_i||^2`` (:func:`jacobi_tau`, with m_i the
number of blocks sharing a row with block i), the condition Deng, Lai, Peng & Yin (2017)
prove for the *Jacobi* proximal sweep; for our Gauss-Seidel sweep it is a rule we check
numerically (Chen's example), not a theorem.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from prox_admm._ops import DENSE_LIMIT, sym_extreme_eigs
from prox_admm.admm import ADMMResult, ProximalADMM
from prox_admm.matrix import BlockMatrix

Array = np.ndarray


# ------------------------------------------------------------------ assumptions


@dataclass(frozen=True)
class RowReport:
    """Rank facts of one block row (see :func:`check_assumptions`)."""

    row: int
    anti_diagonal: int
    shape: tuple[int, int]
    rank: int | None
    full_column_rank: bool | None
    full_row_rank: bool | None
    range_condition: bool | None
    sigma_min: float | None


@dataclass(frozen=True)
class AssumptionReport:
    """What :func:`check_assumptions` found.

    Attributes:
        rows: One :class:`RowReport` per block row.
        whole_shape: Shape of the whole matrix.
        whole_rank: Its rank (None when too large to compute densely).
        whole_full_column_rank: Whether the whole matrix has full column rank (the
            assumption of whole-matrix analyses).
        two_block_equivalent: True when no row involves two of the blocks 1..m-1: the
            Gauss-Seidel sweep over them is then one joint update, and the iteration is
            classic 2-block ADMM (block 0 against the rest).
    """

    rows: tuple[RowReport, ...]
    whole_shape: tuple[int, int]
    whole_rank: int | None
    whole_full_column_rank: bool | None
    two_block_equivalent: bool

    @property
    def range_condition(self) -> bool:
        """(R) holds on every row."""
        return all(r.range_condition for r in self.rows)

    def __str__(self) -> str:
        lines = [
            f"whole matrix {self.whole_shape[0]} x {self.whole_shape[1]}: rank {self.whole_rank}, "
            f"full column rank {self.whole_full_column_rank}; 2-block equivalent "
            f"{self.two_block_equivalent}"
        ]
        for r in self.rows:
            sig = "-" if r.sigma_min is None else f"{r.sigma_min:.3g}"
            lines.append(
                f"row {r.row}: anti-diagonal block {r.anti_diagonal} {r.shape[0]} x {r.shape[1]}, "
                f"rank {r.rank}, "
                f"full column rank {r.full_column_rank}, full row rank {r.full_row_rank}, "
                f"range condition {r.range_condition}, sigma_min {sig}"
            )
        return "\n".join(lines)


def _rank_sig(M: Array, tol: float | None) -> tuple[int, float | None]:
    if M.size == 0:
        return 0, None
    s = np.linalg.svd(M, compute_uv=False)
    thr = tol if tol is not None else max(M.shape) * np.finfo(float).eps * (s[0] if s.size else 0.0)
    nz = s[s > thr]
    return int(nz.size), (float(nz[-1]) if nz.size else None)


def check_assumptions(
    A: BlockMatrix, b: Any = None, *, tol: float | None = None
) -> AssumptionReport:
    """Report the rank conditions of our assumption (R) numerically, row by row.

    For every row k: its anti-diagonal block ``A_k,a(k)`` (rank, full column rank, full
    row rank, smallest nonzero singular value) and the range condition ``rank [A_k0 ...
    A_k,a(k) | b_k] == rank A_k,a(k)``; for the whole matrix: rank and full column rank.
    Ranks use dense SVDs (blocks up to 4000 x 4000; larger ones are reported as None).

    Args:
        A: The constraint matrix.
        b: Right-hand sides (list of p arrays or one array); None treats b as 0.
        tol: Singular values above it count (default: numpy's matrix_rank rule).

    Returns:
        The :class:`AssumptionReport`.

    Example:
        >>> import numpy as np
        >>> I = np.eye(3)
        >>> A = BlockMatrix({(0, 0): I, (0, 2): -I, (1, 0): I, (1, 1): -I}, ([3, 3], [3, 3, 3]))
        >>> rep = check_assumptions(A)
        >>> rep.range_condition, rep.whole_full_column_rank, rep.whole_rank
        (True, False, 6)
    """
    p = A.n_rows
    bs = None
    if b is not None:
        from prox_admm.admm import _split

        bs = _split(b, A.row_sizes, "b")
    rows = []
    for k in range(p):
        j = A.anti_diagonal(k)
        op = A.get(k, j)
        shape = (A.row_sizes[k], A.col_sizes[j])
        if op is None:
            rows.append(RowReport(k, j, shape, 0, False, False, False, None))
            continue
        if max(shape) > DENSE_LIMIT and not op.formable:
            rows.append(RowReport(k, j, shape, None, None, None, None, None))
            continue
        Ad = op.dense()
        rk, sig = _rank_sig(Ad, tol)
        row_mats = [A.ops[(k, col)].dense() for col in A.cols_of[k]]
        if bs is not None:
            row_mats.append(bs[k][:, None])
        r_all, _ = _rank_sig(np.hstack(row_mats), tol)
        rows.append(RowReport(k, j, shape, rk, rk == shape[1], rk == shape[0], r_all == rk, sig))
    whole = A.shape
    w_rank = None
    if max(whole) <= DENSE_LIMIT:
        w_rank, _ = _rank_sig(A.to_dense(), tol)
    two = all(sum(1 for col in A.cols_of[k] if col >= 1) <= 1 for k in range(p))
    return AssumptionReport(
        tuple(rows), whole, w_rank, None if w_rank is None else w_rank == whole[1], two
    )


# ------------------------------------------------------------------ certificate


@dataclass(frozen=True)
class Certificate:
    """The parameter condition of our assumption, evaluated for one solver setup.

    Attributes:
        ok: Whether the sufficient condition holds (every ``c_i > 0``, dual step 1, (R)
            and (S) on every row).
        reason: Why not, or "".
        descent: ``d_i``: decrease of L per unit ``||dx_i||^2`` from the block update.
        margin: ``c_i``: the net decrease of the merit per unit ``||dx_i||^2``.
        gamma: ``gamma_i``: weights of ``||x_i^t - x_i^{t-1}||^2`` in the merit.
        alpha: Shape ``(p, m)``: dual-change constants on ``||dx^{t+1}||``.
        beta: Shape ``(p, m)``: on ``||dx^t||``.
    """

    ok: bool
    reason: str
    descent: Array = field(default_factory=lambda: np.zeros(0))
    margin: Array = field(default_factory=lambda: np.zeros(0))
    gamma: Array = field(default_factory=lambda: np.zeros(0))
    alpha: Array = field(default_factory=lambda: np.zeros((0, 0)))
    beta: Array = field(default_factory=lambda: np.zeros((0, 0)))

    def merit(self, result: ADMMResult) -> Array:
        """``Phi^t = L(x^t, lam^t) + sum_i gamma_i ||x_i^t - x_i^{t-1}||^2`` along a run.

        Shape ``(T,)``; entry t-1 is iteration t. Our condition guarantees
        ``Phi^{t+1} <= Phi^t`` from iteration 1 on (``np.diff(merit)[0:] <= 0``).
        """
        return result.history["lagrangian"] + result.history["step_sq"] @ self.gamma


def _lmin_plus(st: Any, P: Any) -> float:
    """Smallest eigenvalue of H_i + P_i (lower bound from the parts when not formable)."""
    d = st.d
    if st.H is not None:
        M = st.H if P is None else st.H + P
        return sym_extreme_eigs(M, d)[0]
    return 0.0 if P is None else sym_extreme_eigs(P, d)[0]


def descent_certificate(solver: ProximalADMM) -> Certificate:
    """Evaluate our sufficient condition (module docstring) for a configured solver.

    Args:
        solver: A :class:`~prox_admm.admm.ProximalADMM` (its rho, proximal terms and
            subproblem solvers are read; nothing is run).

    Returns:
        The :class:`Certificate`; ``ok`` False with a reason when (R) or (S) fails, the
        dual step is not 1, or some ``c_i <= 0``.
    """
    A, blocks, states, rho = solver.A, solver.blocks, solver._states, solver.rho
    p, m = A.n_rows, A.n_blocks
    if abs(solver.dual_step - 1.0) > 1e-12:
        return Certificate(False, "the certificate needs dual_step = 1")
    rep = check_assumptions(A, solver.b)
    descent = np.zeros(m)
    Mnorm = np.zeros(m)
    for i, st in enumerate(states):
        blk = st.block
        if st.mode in ("quad", "prox", "solve"):
            P = st.P
            p_min = 0.0 if P is None else sym_extreme_eigs(P, st.d)[0]
            curv = blk.curvature
            mu = curv + _lmin_plus(st, P)
            descent[i] = 0.5 * (p_min + max(mu, 0.0))
            Mnorm[i] = 0.0 if P is None else sym_extreme_eigs(P, st.d)[1]
        elif st.mode == "linearized":
            hmin, hmax = sym_extreme_eigs(st.H, st.d) if st.H is not None else (0.0, st.H_norm)
            descent[i] = 0.5 * (st.tau - hmax + max(blk.curvature + st.tau, 0.0))
            Mnorm[i] = max(abs(st.tau - hmin), abs(st.tau - hmax))
        else:  # gradient step
            if blk.lipschitz is None:
                return Certificate(
                    False, f"block {i} takes gradient steps without a known lipschitz constant"
                )
            hmin, hmax = sym_extreme_eigs(st.H, st.d) if st.H is not None else (0.0, st.H_norm)
            descent[i] = st.tau - 0.5 * (blk.lipschitz + hmax)
            Mnorm[i] = max(abs(st.tau - hmin), abs(st.tau - hmax))
    alpha = np.zeros((p, m))
    beta = np.zeros((p, m))
    for k in range(p):
        j = A.anti_diagonal(k)
        r = rep.rows[k]
        if A.get(k, j) is None:
            return Certificate(False, f"row {k} has no anti-diagonal block ({k}, {j})", descent)
        if not r.range_condition or r.sigma_min is None:
            return Certificate(
                False,
                f"row {k}: the range condition (R) fails (the row's range is not inside that of "
                f"A[({k}, {j})])",
                descent,
            )
        blk = blocks[j]
        if blk.grad is None or blk.lipschitz is None:
            return Certificate(
                False,
                f"row {k}: its anti-diagonal block {j} is not smooth (no grad with a lipschitz "
                "constant): (S) fails",
                descent,
            )
        s = r.sigma_min
        if states[j].mode == "gradient":
            beta[k, j] += blk.lipschitz / s
        else:
            alpha[k, j] += blk.lipschitz / s
        alpha[k, j] += Mnorm[j] / s
        beta[k, j] += Mnorm[j] / s
        for kp in A.rows_of[j]:
            if kp >= k:
                continue
            w = A.ops[(kp, j)].norm() / s
            alpha[k] += w * alpha[kp]
            beta[k] += w * beta[kp]
            for col in A.cols_of[kp]:
                if col > j:
                    c = rho[kp] * w * A.ops[(kp, col)].norm()
                    alpha[k, col] += c
                    beta[k, col] += c
    N = np.array(
        [np.count_nonzero(alpha[k]) + np.count_nonzero(beta[k]) for k in range(p)], dtype=float
    )
    w = N / np.asarray(rho)
    margin = descent - (w[:, None] * (alpha**2 + beta**2)).sum(axis=0)
    gamma = (w[:, None] * beta**2).sum(axis=0)
    ok = bool(np.all(margin > 0))
    reason = (
        ""
        if ok
        else "c_i <= 0 for block(s) " + ", ".join(str(i) for i in np.flatnonzero(margin <= 0))
    )
    return Certificate(ok, reason, descent, margin, gamma, alpha, beta)


def suggest_rho(
    blocks: Sequence[Any],
    A: BlockMatrix,
    b: Any,
    *,
    prox_terms: Any = None,
    rho_min: float = 1e-3,
    grow: float = 1.25,
    max_tries: int = 80,
    **kwargs: Any,
) -> tuple[float, Certificate]:
    """Smallest ``rho = rho_min * grow^t`` (one for every row) passing :func:`descent_certificate`.

    Args:
        blocks: The blocks.
        A: The constraint matrix.
        b: Right-hand sides.
        prox_terms: As for :class:`~prox_admm.admm.ProximalADMM`.
        rho_min: First penalty tried.
        grow: Factor between tries, > 1.
        max_tries: Penalties tried.
        **kwargs: Passed to :class:`~prox_admm.admm.ProximalADMM`.

    Returns:
        ``(rho, certificate)``.

    Raises:
        ValueError: If no penalty on the grid passes (the reason of the last failure).
    """
    rho = rho_min
    cert = None
    for _ in range(max_tries):
        solver = ProximalADMM(blocks, A, b, rho=rho, prox_terms=prox_terms, **kwargs)
        cert = descent_certificate(solver)
        if cert.ok:
            return rho, cert
        if (
            "fails" in cert.reason
            or "dual_step" in cert.reason
            or "no anti-diagonal" in cert.reason
        ):
            break
        rho *= grow
    raise ValueError(
        f"no penalty on the grid passes the certificate: {cert.reason if cert else ''}"
    )


def jacobi_tau(A: BlockMatrix, rho: float | Sequence[float]) -> list[float]:
    """The rule ``tau_i = sum_k rho_k (m_k - 1) ||A_ki||^2`` (m_k: blocks in row k).

    Deng, Lai, Peng & Yin (2017) prove ``P_i = rho (1/eps_i - 1) A_i^T A_i`` with
    ``sum_i eps_i < 1`` for the Jacobi proximal sweep; with ``eps_i = 1/m`` and
    ``A_i^T A_i <= ||A_i||^2 I`` this is our rule. For the Gauss-Seidel sweep it is a rule
    of thumb, checked numerically (:func:`iteration_spectral_radius`), not a theorem.
    """
    p = A.n_rows
    rhos = [float(rho)] * p if np.isscalar(rho) else [float(r) for r in rho]  # type: ignore[arg-type]
    taus = []
    for j in range(A.n_blocks):
        t = 0.0
        for k in A.rows_of[j]:
            mk = len(A.cols_of[k])
            t += rhos[k] * (mk - 1) * A.ops[(k, j)].norm() ** 2
        taus.append(t)
    return taus


def iteration_spectral_radius(solver: ProximalADMM, *, unit_tol: float = 1e-8) -> tuple[float, int]:
    """Spectral radius of the affine iteration map of a quadratic problem.

    One iteration maps ``z = (x, lam)`` to ``T z + c`` when every block is quadratic (or
    takes linear steps); ``T`` is built column by column from the solver's own step and
    its eigenvalues computed densely (small problems only).

    Args:
        solver: A configured solver whose blocks are all quadratic.
        unit_tol: Eigenvalues within this of 1 are counted apart (they belong to
            directions of non-unique solutions, not to divergence).

    Returns:
        ``(radius, n_unit)``: the largest modulus among the other eigenvalues, and how
        many eigenvalues are at 1.

    Raises:
        ValueError: If a block is not quadratic or the problem is too large.
    """
    A = solver.A
    for i, st in enumerate(solver._states):
        if not st.block.is_quadratic or st.mode not in ("quad", "gradient"):
            raise ValueError(
                f"block {i} is not a quadratic with a linear update; the map is not affine"
            )
    nx, nl = sum(A.col_sizes), sum(A.row_sizes)
    n = nx + nl
    if n > DENSE_LIMIT:
        raise ValueError(f"the iteration map has dimension {n} > {DENSE_LIMIT}")

    def step(z: Array) -> Array:
        x = np.split(z[:nx], np.cumsum(A.col_sizes)[:-1])
        lam = np.split(z[nx:], np.cumsum(A.row_sizes)[:-1])
        xs, ls = solver.step(list(x), list(lam))
        return np.concatenate([*xs, *ls])

    c = step(np.zeros(n))
    T = np.column_stack([step(e) - c for e in np.eye(n)])
    ev = np.linalg.eigvals(T)
    unit = np.abs(ev - 1.0) <= unit_tol
    rest = np.abs(ev[~unit])
    return (float(rest.max()) if rest.size else 0.0), int(unit.sum())
