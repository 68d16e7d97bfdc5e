"""Label-noise generators for node classification: uniform, pair and structure noise."""

from __future__ import annotations

from typing import Any

import numpy as np
from icml26_core.validation import check_choice, check_float, check_int

__all__ = ["add_label_noise"]

NOISE_KINDS = ("uniform", "pair", "structure")


def _to_numpy_int(a: Any, name: str) -> np.ndarray:
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    arr = np.asarray(a)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def add_label_noise(
    y: Any,
    rate: float,
    kind: str = "uniform",
    *,
    edge_index: Any = None,
    mask: Any = None,
    num_classes: int | None = None,
    seed: int = 0,
) -> np.ndarray:
    """Corrupt exactly ``round(rate * n)`` labels among the ``n`` nodes of ``mask``.

    The corrupted nodes are drawn uniformly at random (without replacement) among the
    eligible nodes, and each corrupted label differs from its true one:

    - ``"uniform"``: a class drawn uniformly among the ``C - 1`` other classes;
    - ``"pair"``: class ``c`` becomes ``(c + 1) mod C``;
    - ``"structure"``: the most frequent *other* label among the node's neighbours
      (true labels; ties go to the smallest class id), which makes the noise depend on
      the topology. Only nodes with a neighbour of another class are eligible; when
      there are fewer of them than the rate asks, ``ValueError`` is raised.

    Args:
        y: int (num_nodes,) true labels in ``0..C-1`` (numpy or torch).
        rate: Fraction of the masked nodes to corrupt, in ``[0, 1)``.
        kind: ``"uniform"``, ``"pair"`` or ``"structure"``.
        edge_index: int (2, E) edges (both directions for an undirected graph); needed
            by ``"structure"``.
        mask: bool (num_nodes,) nodes that may be corrupted (e.g. train and validation);
            all nodes when None.
        num_classes: ``C``; ``y.max() + 1`` when None.
        seed: Seed of the numpy generator that draws the nodes and the uniform labels.

    Returns:
        int64 (num_nodes,) noisy labels (a new array; ``y`` is not modified).

    Raises:
        ValueError: If ``y`` is empty or not 1-D, ``rate`` is outside ``[0, 1)``,
            ``kind`` is unknown, ``edge_index``
            is missing or out of range for ``"structure"``, or too few nodes are eligible.
        TypeError: If ``y`` does not hold integers.
    """
    yy = _to_numpy_int(y, "y")
    if yy.ndim != 1 or yy.size == 0:
        raise ValueError(f"y must be 1-D (num_nodes,) and non-empty, got shape {yy.shape}")
    rate = check_float("rate", rate, low=0.0, high=1.0, high_inclusive=False)
    kind = check_choice("kind", kind, NOISE_KINDS)
    seed = check_int("seed", seed, low=0)
    n = yy.shape[0]
    C = int(yy.max()) + 1 if num_classes is None else check_int("num_classes", num_classes, low=2)
    if yy.min() < 0 or yy.max() >= C:
        raise ValueError(f"y must lie in 0..{C - 1}, got range [{yy.min()}, {yy.max()}]")
    if C < 2:
        raise ValueError("label noise needs at least 2 classes")
    if mask is None:
        m = np.ones(n, dtype=bool)
    else:
        m = np.asarray(mask.detach().cpu().numpy() if hasattr(mask, "detach") else mask)
        if m.shape != (n,) or m.dtype != bool:
            raise ValueError(f"mask must be bool of shape ({n},), got {m.dtype} {m.shape}")
    rng = np.random.default_rng(seed)
    out = yy.copy()
    target = np.full(n, -1, dtype=np.int64)
    eligible = np.flatnonzero(m)
    if kind == "structure":
        if edge_index is None:
            raise ValueError('kind="structure" needs edge_index')
        ei = _to_numpy_int(edge_index, "edge_index")
        if ei.ndim != 2 or ei.shape[0] != 2:
            raise ValueError(f"edge_index must have shape (2, E), got {ei.shape}")
        if ei.size and (ei.min() < 0 or ei.max() >= n):
            raise ValueError(f"edge_index must lie in 0..{n - 1}, got [{ei.min()}, {ei.max()}]")
        counts = np.zeros((n, C), dtype=np.int64)
        np.add.at(counts, (ei[1], yy[ei[0]]), 1)  # labels of the in-neighbours
        np.add.at(counts, (ei[0], yy[ei[1]]), 1)  # and out-neighbours (undirected: twice)
        counts[np.arange(n), yy] = 0
        has_other = counts.max(axis=1) > 0
        target = np.where(has_other, counts.argmax(axis=1), -1)
        eligible = eligible[has_other[eligible]]
    k = round(rate * int(m.sum()))
    if k > eligible.size:
        raise ValueError(
            f"rate={rate} asks for {k} corrupted labels but only {eligible.size} nodes are "
            f"eligible for {kind!r} noise"
        )
    chosen = rng.choice(eligible, size=k, replace=False) if k else np.empty(0, np.int64)
    if kind == "uniform":
        shift = rng.integers(1, C, size=k)
        out[chosen] = (yy[chosen] + shift) % C
    elif kind == "pair":
        out[chosen] = (yy[chosen] + 1) % C
    else:
        out[chosen] = target[chosen]
    return out
