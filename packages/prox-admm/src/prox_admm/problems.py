"""Ready problems in block anti-upper triangular form.

Each constructor returns a :class:`Problem`: the blocks, the :class:`BlockMatrix`, the
right-hand sides, which block holds the answer, and the original objective.

- :func:`mcp_nonneg_regression`: MCP-penalized non-negative least squares, in two splits:
  ``"copies"`` (the split the issue names: x data fit, y MCP copy, w non-negative copy,
  rows ``x - w = 0`` and ``x - y = 0``: anti-diagonal blocks nonsmooth, outside our
  assumption) and ``"consensus"`` (z carries MCP + non-negativity, the data fit is cut
  into sample parts x_1..x_s, rows ``x_i - z = 0``: smooth identity anti-diagonal
  blocks, inside it). Both whole matrices lack full column rank.
- :func:`consensus`: ``min g(z) + sum_i f_i(x_i)`` s.t. ``x_i = z``.
- :func:`elastic_net_box`: box-constrained elastic net, split like ``"copies"``.
- :func:`qp_with_slacks`: ``min 0.5 x^T Q x + q^T x`` s.t. ``l_r <= C_r x <= u_r``, one
  slack block and one row per constraint group (OSQP's form, rows kept apart).
- :func:`chen_example`: Chen, He, Ye & Yuan's (2016) 3-block example on which the
  direct extension of ADMM diverges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from icml26_core.validation import check_choice, check_float, check_int

from prox_admm.admm import ProximalADMM
from prox_admm.blocks import Block, box, l1, least_squares, mcp, nonneg, quadratic, zero
from prox_admm.matrix import BlockMatrix

Array = np.ndarray


@dataclass
class Problem:
    """A problem ready for :class:`~prox_admm.admm.ProximalADMM`.

    Attributes:
        blocks: The m blocks.
        A: The constraint matrix.
        b: The p right-hand sides.
        names: A label per block.
        solution_block: Index of the block that holds the answer (a feasible copy).
        objective: The original objective at an answer vector (``inf`` if infeasible).
        description: One line.
        info: Extra facts (data sizes, parameters).
    """

    blocks: list[Block]
    A: BlockMatrix
    b: list[Array]
    names: list[str]
    solution_block: int
    objective: Callable[[Array], float]
    description: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def solver(self, **kwargs: Any) -> ProximalADMM:
        """A :class:`~prox_admm.admm.ProximalADMM` on this problem (kwargs: rho, prox_terms...)."""
        return ProximalADMM(self.blocks, self.A, self.b, **kwargs)

    def solution(self, x: Sequence[Array]) -> Array:
        """The answer vector from a solver's blocks."""
        return np.asarray(x[self.solution_block])


def _xy(X: Any, y: Any) -> tuple[Array, Array]:
    Xa = np.asarray(X, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64).ravel()
    if Xa.ndim != 2 or Xa.shape[0] == 0 or Xa.shape[1] == 0:
        raise ValueError(f"X must be a non-empty 2-D array (n, d), got shape {Xa.shape}")
    if ya.shape != (Xa.shape[0],):
        raise ValueError(f"y must have shape ({Xa.shape[0]},) to match X, got {ya.shape}")
    if not (np.all(np.isfinite(Xa)) and np.all(np.isfinite(ya))):
        raise ValueError("X and y must be finite (no NaN or inf)")
    return Xa, ya


def mcp_nonneg_objective(X: Any, y: Any, lam: float, gamma: float, beta: Any) -> float:
    """``F(beta) = ||X beta - y||^2 / (2n) + sum_j MCP(beta_j)`` for ``beta >= 0``, else inf."""
    Xa, ya = _xy(X, y)
    beta = np.asarray(beta, dtype=np.float64)
    r = Xa @ beta - ya
    pen = mcp(lam, gamma, nonneg=True)
    return float(0.5 * r @ r / Xa.shape[0] + pen.value(beta))


def consensus(
    smooth: Sequence[Block], shared: Block, dim: int, *, names: Sequence[str] | None = None
) -> Problem:
    """``min g(z) + sum_i f_i(x_i)`` s.t. ``x_i - z = 0`` for every i.

    Block 0 is z (the shared, possibly nonsmooth and nonconvex block); blocks 1..s are the
    ``f_i``; row k reads ``x_{s-k} - z = 0``, so each row's anti-diagonal block is an
    identity on a smooth block: our assumption (R + S) holds when every f_i is smooth,
    while the whole matrix (s*dim x (s+1)*dim) has no full column rank.

    Args:
        smooth: The blocks f_1..f_s, each on R^dim.
        shared: The block g on R^dim.
        dim: Dimension of z and of every x_i.
        names: Labels of the s + 1 blocks.
    """
    dim = check_int("dim", dim, low=1)
    s = len(smooth)
    if s < 1:
        raise ValueError("consensus needs at least one smooth block")
    m = s + 1
    eye = sp.eye_array(dim, format="csr")
    blocks = {}
    for k in range(s):
        blocks[(k, 0)] = -eye
        blocks[(k, m - 1 - k)] = eye
    A = BlockMatrix(blocks, ([dim] * s, [dim] * m))
    bl = [shared, *smooth]
    nm = list(names) if names is not None else ["z", *[f"x_{i + 1}" for i in range(s)]]

    def obj(z: Array) -> float:
        return float(sum(b.value(z) for b in bl))

    return Problem(bl, A, [np.zeros(dim) for _ in range(s)], nm, 0, obj, "consensus")


def mcp_nonneg_regression(
    X: Any, y: Any, lam: float, gamma: float = 3.0, *, split: str = "consensus", n_parts: int = 2
) -> Problem:
    """MCP-penalized non-negative least squares as a block anti-upper triangular problem.

    ``min_beta ||X beta - y||^2 / (2n) + sum_j MCP_{lam,gamma}(beta_j)`` s.t. ``beta >= 0``.

    Args:
        X: Design, shape ``(n, d)``.
        y: Targets, shape ``(n,)``.
        lam: MCP level, > 0.
        gamma: MCP concavity, > 0.
        split: ``"consensus"`` (z = MCP + non-negativity; the data fit cut into
            ``n_parts`` interleaved sample parts, rows ``x_i - z = 0``) or ``"copies"``
            (blocks x = data fit, y = MCP copy, w = non-negative copy; rows
            ``x - w = 0``, ``x - y = 0``, i.e. ``[[I, 0, -I], [I, -I, 0]]``).
        n_parts: Sample parts of the consensus split, >= 1.

    Returns:
        The :class:`Problem` (answer: the z block, or the w block for ``"copies"``).
    """
    Xa, ya = _xy(X, y)
    lam = check_float("lam", lam, low=0.0, low_inclusive=False)
    gamma = check_float("gamma", gamma, low=0.0, low_inclusive=False)
    check_choice("split", split, ("consensus", "copies"))
    n, d = Xa.shape

    def obj(beta: Array) -> float:
        return mcp_nonneg_objective(Xa, ya, lam, gamma, beta)

    info = {"n": n, "d": d, "lam": lam, "gamma": gamma, "split": split}
    if split == "copies":
        eye = np.eye(d)
        A = BlockMatrix({(0, 0): eye, (0, 2): -eye, (1, 0): eye, (1, 1): -eye}, ([d, d], [d, d, d]))
        blocks = [
            least_squares(Xa, ya, 1.0 / n, name="data fit"),
            mcp(lam, gamma, name="MCP"),
            nonneg(name="w >= 0"),
        ]
        return Problem(
            blocks,
            A,
            [np.zeros(d), np.zeros(d)],
            ["x (data fit)", "y (MCP)", "w (>= 0)"],
            2,
            obj,
            "MCP non-negative regression, copies split",
            info,
        )
    n_parts = check_int("n_parts", n_parts, low=1, high=n)
    parts = [
        least_squares(Xa[i::n_parts], ya[i::n_parts], 1.0 / n, name=f"data part {i + 1}")
        for i in range(n_parts)
    ]
    prob = consensus(parts, mcp(lam, gamma, nonneg=True, name="MCP, >= 0"), d)
    prob.objective = obj
    prob.description = f"MCP non-negative regression, consensus split ({n_parts} parts)"
    prob.info = {**info, "n_parts": n_parts}
    return prob


def elastic_net_box(
    X: Any, y: Any, alpha: float, l1_ratio: float = 0.5, lower: Any = None, upper: Any = None
) -> Problem:
    """Box-constrained elastic net, split into data fit, L1 copy and box copy.

    ``min ||X beta - y||^2 / (2n) + alpha l1_ratio ||beta||_1``
    ``+ alpha (1 - l1_ratio) / 2 ||beta||^2``
    s.t. ``lower <= beta <= upper`` (scikit-learn's ElasticNet scaling). Blocks (beta, z, s),
    rows ``beta - s = 0`` and ``beta - z = 0``.

    Args:
        X: Design, shape ``(n, d)``.
        y: Targets, shape ``(n,)``.
        alpha: Overall penalty, >= 0.
        l1_ratio: Share of L1 in ``[0, 1]``.
        lower: Lower bounds (scalar or ``(d,)``), containing 0 with ``upper``.
        upper: Upper bounds.
    """
    Xa, ya = _xy(X, y)
    alpha = check_float("alpha", alpha, low=0.0)
    l1_ratio = check_float("l1_ratio", l1_ratio, low=0.0, high=1.0)
    n, d = Xa.shape
    lo = -np.inf if lower is None else np.broadcast_to(np.asarray(lower, dtype=np.float64), (d,))
    hi = np.inf if upper is None else np.broadcast_to(np.asarray(upper, dtype=np.float64), (d,))
    pen = l1(alpha * l1_ratio, name="L1")
    bx = box(lo, hi, name="box")
    fit = least_squares(Xa, ya, 1.0 / n, ridge=alpha * (1 - l1_ratio), name="data fit + ridge")
    eye = np.eye(d)
    A = BlockMatrix({(0, 0): eye, (0, 2): -eye, (1, 0): eye, (1, 1): -eye}, ([d, d], [d, d, d]))

    def obj(beta: Array) -> float:
        if bx.value(beta) > 0:
            return float("inf")
        return fit.value(beta) + pen.value(beta)

    return Problem(
        [fit, pen, bx],
        A,
        [np.zeros(d), np.zeros(d)],
        ["beta (fit)", "z (L1)", "s (box)"],
        2,
        obj,
        "box-constrained elastic net",
        {"n": n, "d": d, "alpha": alpha, "l1_ratio": l1_ratio},
    )


def qp_with_slacks(Q: Any, q: Any, constraints: Sequence[tuple[Any, Any, Any]]) -> Problem:
    """``min 0.5 x^T Q x + q^T x`` s.t. ``l_r <= C_r x <= u_r``, one slack block per group.

    Blocks: x (block 0, quadratic) and slacks s_r in their boxes; row k is
    ``C_k x - s_k = 0`` and s_k is its anti-diagonal block (index ``m - 1 - k``). Use
    ``l = u`` for equality rows.

    Args:
        Q: Symmetric PSD matrix ``(n, n)``, dense or sparse.
        q: Linear term ``(n,)``.
        constraints: Sequence of ``(C_r, l_r, u_r)``; ``C_r`` of shape ``(n_r, n)``,
            bounds scalars or ``(n_r,)`` (``-inf``/``inf`` allowed).
    """
    quad = quadratic(Q, q, name="x")
    n = quad.Q.shape[0]
    if len(constraints) == 0:
        raise ValueError("constraints must hold at least one (C, l, u) group")
    r = len(constraints)
    m = r + 1
    blocks_A: dict[tuple[int, int], Any] = {}
    slack_blocks: list[Block | None] = [None] * m
    names = ["x"] + [""] * r
    rows = []
    for k, (C, lo, hi) in enumerate(constraints):
        Cm = (
            sp.csr_array(C, dtype=np.float64)
            if sp.issparse(C)
            else np.atleast_2d(np.asarray(C, dtype=np.float64))
        )
        if Cm.shape[1] != n:
            raise ValueError(f"constraints[{k}]: C has {Cm.shape[1]} columns, expected {n}")
        nk = Cm.shape[0]
        lo_v = np.broadcast_to(
            np.asarray(-np.inf if lo is None else lo, dtype=np.float64), (nk,)
        ).copy()
        hi_v = np.broadcast_to(
            np.asarray(np.inf if hi is None else hi, dtype=np.float64), (nk,)
        ).copy()
        if np.any(lo_v > hi_v):
            raise ValueError(f"constraints[{k}]: lower bound above upper bound")
        j = m - 1 - k
        blocks_A[(k, 0)] = Cm
        blocks_A[(k, j)] = -sp.eye_array(nk, format="csr")
        slack_blocks[j] = box(lo_v, hi_v, name=f"s_{k}")
        names[j] = f"s_{k}"
        rows.append(nk)
    sizes = [n] + [0] * r
    for k in range(r):
        sizes[m - 1 - k] = rows[k]
    A = BlockMatrix(blocks_A, (rows, sizes))
    bl = [quad] + [b for b in slack_blocks[1:] if b is not None]

    def obj(x: Array) -> float:
        return quad.value(x)

    return Problem(
        bl, A, [np.zeros(nk) for nk in rows], names, 0, obj, "QP with slack blocks", {"n": n}
    )


def chen_example() -> Problem:
    """Chen, He, Ye & Yuan's (2016) counterexample: ``min 0`` s.t. ``A x = 0``, 3 scalar blocks.

    ``A = [[1, 1, 1], [1, 1, 2], [1, 2, 2]]`` (invertible; the solution is x = 0, lam = 0).
    One block row, so it lies in the block anti-upper triangular class. The direct
    extension of ADMM (rho = 1, no proximal terms) diverges from almost every start.
    """
    Am = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 2.0], [1.0, 2.0, 2.0]])
    A = BlockMatrix({(0, j): Am[:, j : j + 1] for j in range(3)}, ([3], [1, 1, 1]))
    blocks = [zero(1, name=f"x_{j + 1}") for j in range(3)]
    return Problem(
        blocks,
        A,
        [np.zeros(3)],
        ["x_1", "x_2", "x_3"],
        0,
        lambda x: 0.0,
        "Chen et al. (2016) example",
        {"A": Am},
    )
