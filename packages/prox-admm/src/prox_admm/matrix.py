"""Block anti-upper triangular constraint matrices.

Rows k = 0..p-1 (block rows, each its own constraint ``sum_j A_kj x_j = b_k``) and blocks
j = 0..m-1 (the variables x_j). The pattern: ``A_kj = 0`` for ``j > m - 1 - k``, so row 0
may involve every block, row 1 all but the last, ..., and row k's last admissible block
``a(k) = m - 1 - k`` is its *anti-diagonal* block. (The paper's 1-based indices: row k
involves blocks 1..m-k+1.) Blocks not given are zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from icml26_core.validation import check_int

from prox_admm._ops import Op

Array = np.ndarray


class BlockMatrix:
    """A block anti-upper triangular matrix ``A = [A_kj]``, validated on construction.

    Args:
        blocks: ``{(k, j): matrix}``; each matrix an ndarray, a scipy sparse matrix or a
            ``scipy.sparse.linalg.LinearOperator`` of shape ``(row_sizes[k], col_sizes[j])``.
            0-based indices; pairs not given are zero blocks.
        shapes: ``(row_sizes, col_sizes)``: the length of each ``b_k`` (p entries) and the
            dimension of each block ``x_j`` (m entries).

    Raises:
        ValueError: If a key is out of range, a block has the wrong shape, a block lies
            above the anti-diagonal (``j > m - 1 - k``; the message names it), p > m, a
            row or a block column is empty, or a matrix holds NaN/inf.
        TypeError: If a key is not a pair of integers or a matrix is of an unknown kind.

    Example:
        >>> import numpy as np
        >>> I = np.eye(2)
        >>> A = BlockMatrix({(0, 0): I, (0, 2): -I, (1, 0): I, (1, 1): -I}, ([2, 2], [2, 2, 2]))
        >>> A.n_rows, A.n_blocks, A.anti_diagonal(0), A.anti_diagonal(1)
        (2, 3, 2, 1)
        >>> BlockMatrix({(1, 2): I}, ([2, 2], [2, 2, 2]))
        Traceback (most recent call last):
        ...
        ValueError: block (1, 2) lies above the anti-diagonal: row 1 may involve ...
    """

    def __init__(
        self, blocks: Mapping[tuple[int, int], Any], shapes: Sequence[Sequence[int]]
    ) -> None:
        if not isinstance(blocks, Mapping):
            raise TypeError(
                f"blocks must be a mapping {{(k, j): matrix}}, got {type(blocks).__name__}"
            )
        if len(shapes) != 2:
            raise ValueError("shapes must be (row_sizes, col_sizes)")
        self.row_sizes = [
            check_int(f"row_sizes[{k}]", int(s) if isinstance(s, np.integer) else s, low=1)
            for k, s in enumerate(shapes[0])
        ]
        self.col_sizes = [
            check_int(f"col_sizes[{j}]", int(s) if isinstance(s, np.integer) else s, low=1)
            for j, s in enumerate(shapes[1])
        ]
        p, m = len(self.row_sizes), len(self.col_sizes)
        if p == 0 or m == 0:
            raise ValueError("a BlockMatrix needs at least one row and one block")
        if p > m:
            raise ValueError(
                f"an anti-upper triangular pattern has at most m = {m} rows, got p = {p}"
            )
        self.ops: dict[tuple[int, int], Op] = {}
        for key, mat in blocks.items():
            if not (
                isinstance(key, tuple)
                and len(key) == 2
                and all(isinstance(i, int | np.integer) and not isinstance(i, bool) for i in key)
            ):
                raise TypeError(f"block keys must be pairs of integers (k, j), got {key!r}")
            k, j = int(key[0]), int(key[1])
            if not (0 <= k < p and 0 <= j < m):
                raise ValueError(f"block ({k}, {j}) is out of range: {p} rows and {m} blocks")
            if j > m - 1 - k:
                raise ValueError(
                    f"block ({k}, {j}) lies above the anti-diagonal: row {k} may involve blocks "
                    f"0..{m - 1 - k} only (A_kj = 0 for j > m - 1 - k, m = {m})"
                )
            op = Op(mat, name=f"A[({k}, {j})]")
            want = (self.row_sizes[k], self.col_sizes[j])
            if op.shape != want:
                raise ValueError(f"block ({k}, {j}) has shape {op.shape}, expected {want}")
            self.ops[(k, j)] = op
        for k in range(p):
            if not any(kk == k for kk, _ in self.ops):
                raise ValueError(f"row {k} has no block: every constraint row needs one")
        for j in range(m):
            if not any(jj == j for _, jj in self.ops):
                raise ValueError(f"block column {j} appears in no row: x_{j} is unconstrained")
        self.rows_of: list[list[int]] = [
            sorted(k for (k, jj) in self.ops if jj == j) for j in range(m)
        ]
        self.cols_of: list[list[int]] = [
            sorted(j for (kk, j) in self.ops if kk == k) for k in range(p)
        ]

    @classmethod
    def from_dense(
        cls, A: Any, row_sizes: Sequence[int], col_sizes: Sequence[int], *, tol: float = 0.0
    ) -> BlockMatrix:
        """Cut a dense (or sparse) matrix into blocks and validate the pattern.

        Blocks whose entries are all within ``tol`` of 0 are dropped (zero blocks); a
        nonzero block above the anti-diagonal raises the error naming it.
        """
        dense = A.toarray() if sp.issparse(A) else np.asarray(A, dtype=np.float64)
        rs, cs = [int(r) for r in row_sizes], [int(c) for c in col_sizes]
        if dense.shape != (sum(rs), sum(cs)):
            raise ValueError(
                f"A has shape {dense.shape}, but the sizes add up to {(sum(rs), sum(cs))}"
            )
        ro, co = np.cumsum([0, *rs]), np.cumsum([0, *cs])
        blocks = {}
        for k in range(len(rs)):
            for j in range(len(cs)):
                blk = dense[ro[k] : ro[k + 1], co[j] : co[j + 1]]
                if np.max(np.abs(blk), initial=0.0) > tol:
                    blocks[(k, j)] = blk
        return cls(blocks, (rs, cs))

    @property
    def n_rows(self) -> int:
        """Number of block rows p."""
        return len(self.row_sizes)

    @property
    def n_blocks(self) -> int:
        """Number of blocks m."""
        return len(self.col_sizes)

    @property
    def shape(self) -> tuple[int, int]:
        """Shape of the whole matrix, ``(sum(row_sizes), sum(col_sizes))``."""
        return sum(self.row_sizes), sum(self.col_sizes)

    def anti_diagonal(self, k: int) -> int:
        """Index ``a(k) = m - 1 - k`` of row k's anti-diagonal block."""
        return self.n_blocks - 1 - k

    def last_block(self, k: int) -> int:
        """The last block that row k actually involves (its anti-diagonal one if given)."""
        return max(self.cols_of[k])

    def get(self, k: int, j: int) -> Op | None:
        """The operator of block (k, j), or None for a zero block."""
        return self.ops.get((k, j))

    def residuals(self, x: Sequence[Array], b: Sequence[Array]) -> list[Array]:
        """``r_k = sum_j A_kj x_j - b_k`` for every row."""
        r = [-np.asarray(bk, dtype=np.float64).copy() for bk in b]
        for (k, j), op in self.ops.items():
            r[k] += op.mv(x[j])
        return r

    def to_dense(self) -> Array:
        """The whole matrix as a dense array (for small problems and checks)."""
        ro, co = np.cumsum([0, *self.row_sizes]), np.cumsum([0, *self.col_sizes])
        out = np.zeros(self.shape)
        for (k, j), op in self.ops.items():
            out[ro[k] : ro[k + 1], co[j] : co[j + 1]] = op.dense()
        return out

    def __repr__(self) -> str:
        nz = ", ".join(f"({k}, {j})" for k, j in sorted(self.ops))
        return f"BlockMatrix(rows={self.row_sizes}, blocks={self.col_sizes}, nonzero=[{nz}])"
