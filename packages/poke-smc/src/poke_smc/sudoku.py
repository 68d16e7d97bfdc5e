"""Sudoku grids and puzzles: random solved grids, easy puzzles with unique solutions.

Grids are ``n x n`` with boxes of ``b x b`` (``n = b * b``: 4x4 or 9x9), digits stored
as ``0 .. n-1`` and empty cells as ``-1``. Solved grids come from the canonical pattern
``(b * (r % b) + r // b + c) % n`` under the validity-preserving symmetries (digit
relabelling, rows within a band, bands, columns within a stack, stacks, transposition),
which is fast enough to draw a fresh batch at every training step. Puzzles are made by
emptying cells of a solved grid while the puzzle stays solvable by naked singles alone
(a cell with one candidate left is filled, repeatedly): such a puzzle has exactly one
solution, and "naked singles only" is what "easy" means here. :func:`count_solutions`
(backtracking) checks uniqueness independently in the tests.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "count_solutions",
    "is_valid_solution",
    "make_puzzle",
    "random_grids",
    "solve_singles",
]


def _box(n: int) -> int:
    b = round(n**0.5)
    if b * b != n or b < 2:
        raise ValueError(f"grid size must be 4 or 9 (a square of an int >= 2), got {n}")
    return b


def _perm_blocks(rng: np.random.Generator, batch: int, b: int) -> np.ndarray:
    """Row (or column) orders ``(batch, b*b)``: bands permuted, rows within bands permuted."""
    bands = np.argsort(rng.random((batch, b)), axis=1)
    within = np.argsort(rng.random((batch, b, b)), axis=2)
    return (bands[:, :, None] * b + within).reshape(batch, b * b)


def random_grids(batch: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Random solved grids, int64 ``(batch, n, n)`` with digits ``0 .. n-1``.

    Raises:
        ValueError: If ``n`` is not 4 or 9 (or another square) or ``batch < 1``.
    """
    b = _box(n)
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    r = np.arange(n)
    base = (b * (r[:, None] % b) + r[:, None] // b + r[None, :]) % n
    rows = _perm_blocks(rng, batch, b)
    cols = _perm_blocks(rng, batch, b)
    digits = np.argsort(rng.random((batch, n)), axis=1)
    grids = base[rows[:, :, None], cols[:, None, :]]
    grids = np.take_along_axis(digits, grids.reshape(batch, -1), axis=1).reshape(batch, n, n)
    flip = rng.random(batch) < 0.5
    grids[flip] = grids[flip].transpose(0, 2, 1)
    return grids.astype(np.int64)


def is_valid_solution(grid: np.ndarray) -> bool:
    """Whether a filled ``n x n`` grid has every digit once per row, column and box."""
    g = np.asarray(grid)
    n = g.shape[0]
    b = _box(n)
    want = set(range(n))
    if g.shape != (n, n) or (g < 0).any():
        return False
    boxes = g.reshape(b, b, b, b).transpose(0, 2, 1, 3).reshape(n, n)
    return all(set(line) == want for m in (g, g.T, boxes) for line in m.tolist())


def _peers(n: int) -> list[list[int]]:
    b = _box(n)
    out = []
    for i in range(n * n):
        r, c = divmod(i, n)
        br, bc = r // b * b, c // b * b
        ps = {r * n + k for k in range(n)} | {k * n + c for k in range(n)}
        ps |= {(br + dr) * n + bc + dc for dr in range(b) for dc in range(b)}
        ps.discard(i)
        out.append(sorted(ps))
    return out


_PEERS: dict[int, list[list[int]]] = {}


def _peer_table(n: int) -> list[list[int]]:
    if n not in _PEERS:
        _PEERS[n] = _peers(n)
    return _PEERS[n]


def solve_singles(puzzle: np.ndarray) -> np.ndarray | None:
    """Fill a puzzle by naked singles only; the solved grid, or None if that gets stuck.

    Args:
        puzzle: int ``(n, n)`` with ``-1`` for empty cells.

    Returns:
        The filled grid (a new array), or None if some empty cell never has a single
        candidate (or a contradiction appears).
    """
    g = np.asarray(puzzle).reshape(-1).tolist()
    n = round(len(g) ** 0.5)
    peers = _peer_table(n)
    full = (1 << n) - 1
    empty = [i for i, v in enumerate(g) if v < 0]
    while empty:
        progress = False
        left = []
        for i in empty:
            used = 0
            for p in peers[i]:
                v = g[p]
                if v >= 0:
                    used |= 1 << v
            cand = full & ~used
            if cand == 0:
                return None
            if cand & (cand - 1) == 0:
                g[i] = cand.bit_length() - 1
                progress = True
            else:
                left.append(i)
        if not progress:
            return None
        empty = left
    return np.array(g, dtype=np.int64).reshape(n, n)


def count_solutions(puzzle: np.ndarray, limit: int = 2) -> int:
    """Number of solutions of a puzzle by backtracking, stopping at ``limit``.

    Args:
        puzzle: int ``(n, n)`` with ``-1`` for empty cells.
        limit: Stop counting once this many are found.

    Returns:
        ``min(#solutions, limit)``.
    """
    g = np.asarray(puzzle).reshape(-1).tolist()
    n = round(len(g) ** 0.5)
    peers = _peer_table(n)
    full = (1 << n) - 1
    count = 0

    def search() -> None:
        nonlocal count
        best, best_cand, best_k = -1, 0, n + 1
        for i, v in enumerate(g):
            if v < 0:
                used = 0
                for p in peers[i]:
                    if g[p] >= 0:
                        used |= 1 << g[p]
                cand = full & ~used
                k = cand.bit_count()
                if k < best_k:
                    best, best_cand, best_k = i, cand, k
                    if k <= 1:
                        break
        if best < 0:
            count += 1
            return
        while best_cand and count < limit:
            low = best_cand & -best_cand
            g[best] = low.bit_length() - 1
            search()
            best_cand ^= low
        g[best] = -1

    search()
    return count


def make_puzzle(
    solution: np.ndarray, blanks: int, rng: np.random.Generator, *, tries: int = 20
) -> np.ndarray | None:
    """Empty ``blanks`` cells of ``solution`` keeping it solvable by naked singles.

    Cells are tried in random order; a cell is emptied only if the puzzle stays solvable
    by naked singles, which also makes its solution unique. Up to ``tries`` random
    orders are tried.

    Returns:
        The puzzle (``-1`` for empty cells), or None if no order reached ``blanks``.

    Raises:
        ValueError: If ``blanks`` is not in ``[1, n*n)``.
    """
    sol = np.asarray(solution, dtype=np.int64)
    n = sol.shape[0]
    if not 1 <= blanks < n * n:
        raise ValueError(f"blanks must be in [1, {n * n}), got {blanks}")
    for _ in range(tries):
        puzzle = sol.copy().reshape(-1)
        removed = 0
        for i in rng.permutation(n * n):
            keep = puzzle[i]
            puzzle[i] = -1
            if solve_singles(puzzle.reshape(n, n)) is None:
                puzzle[i] = keep
            else:
                removed += 1
                if removed == blanks:
                    return puzzle.reshape(n, n)
    return None
