"""The multi-objective TSP: instances, tour costs, scalarizations, Pareto fronts, hypervolume.

An instance of the M-objective Euclidean TSP (KroAB style) has ``n`` cities, each with
M coordinate pairs; objective ``m`` of a tour is its length under the ``m``-th pair.
Coordinates are stored as one array of shape ``(B, n, 2M)``: columns ``2m, 2m + 1``
are the ``m``-th pair.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_choice, check_int

SCALARIZATIONS = ("tchebycheff", "weighted_sum")


def _as_real_tensor(value: Any, name: str) -> torch.Tensor:
    """``value`` as a real (bool, integer or floating) tensor, or a ValueError naming it."""
    if isinstance(value, torch.Tensor):
        t = value
    else:
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError) as exc:  # ragged nested lists
            raise ValueError(f"{name} must be a numeric array, got {type(value).__name__}") from exc
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
        t = torch.as_tensor(arr)
    if t.is_complex():
        raise ValueError(f"{name} must be real, got dtype {t.dtype}")
    return t


def check_coords(coords: Any, n_obj: int | None = None, name: str = "coords") -> torch.Tensor:
    """Validate coordinates and return them as a float tensor of shape ``(B, n, 2M)``.

    Args:
        coords: Array or tensor of shape ``(B, n, 2M)`` (or ``(n, 2M)`` for one instance,
            which gets a batch axis), finite, ``n >= 3``.
        n_obj: Expected number of objectives M (``None``: any M >= 1).
        name: Argument name used in error messages.

    Returns:
        A floating tensor (float32 unless a float64 tensor was given), shape ``(B, n, 2M)``.

    Raises:
        ValueError: If ``coords`` is not a real numeric array, or the shape, the
            finiteness, ``n`` or M is wrong.
    """
    x = _as_real_tensor(coords, name)
    if not x.is_floating_point():
        x = x.to(torch.float32)
    if x.dim() == 2:
        x = x.unsqueeze(0)
    if x.dim() != 3 or x.shape[-1] < 2 or x.shape[-1] % 2:
        raise ValueError(
            f"{name} must have shape (B, n, 2M) with an even last axis, got {tuple(x.shape)}"
        )
    if x.shape[1] < 3:
        raise ValueError(f"{name} must have n >= 3 cities, got n = {x.shape[1]}")
    if x.shape[0] < 1:
        raise ValueError(f"{name} is empty (batch size 0)")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or inf")
    if n_obj is not None and x.shape[-1] != 2 * n_obj:
        raise ValueError(
            f"{name} has {x.shape[-1] // 2} objectives (last axis {x.shape[-1]}), "
            f"expected n_obj = {n_obj} (last axis {2 * n_obj})"
        )
    return x


def check_prefs(prefs: Any, n_obj: int, name: str = "prefs", atol: float = 1e-5) -> torch.Tensor:
    """Validate preference vectors on the simplex; return a float tensor ``(P, M)``.

    Args:
        prefs: Array of shape ``(P, M)`` (or ``(M,)``), nonnegative, rows summing to 1.
        n_obj: The number of objectives M.
        name: Argument name used in error messages.
        atol: Tolerance on the row sums.

    Raises:
        ValueError: On a non-numeric array, a wrong shape, NaN, negative entries or rows
            not summing to 1.
    """
    p = _as_real_tensor(prefs, name)
    if not p.is_floating_point():
        p = p.to(torch.float32)
    if p.dim() == 1:
        p = p.unsqueeze(0)
    if p.dim() != 2 or p.shape[1] != n_obj or p.shape[0] < 1:
        raise ValueError(f"{name} must have shape (P, {n_obj}), got {tuple(p.shape)}")
    if not bool(torch.isfinite(p).all()):
        raise ValueError(f"{name} contains NaN or inf")
    if bool((p < 0).any()):
        raise ValueError(f"{name} must be nonnegative, got min {float(p.min()):.3g}")
    sums = p.sum(-1)
    if bool(((sums - 1).abs() > atol).any()):
        raise ValueError(
            f"every row of {name} must sum to 1, got sums in "
            f"[{float(sums.min()):.6g}, {float(sums.max()):.6g}]"
        )
    return p


def uniform_instances(
    n_instances: int, n_nodes: int, n_obj: int = 2, *, seed: int | None = 0
) -> np.ndarray:
    """Random instances, uniform in ``[0, 1]^{2M}`` (the field's benchmark distribution).

    Returns:
        float32 array of shape ``(n_instances, n_nodes, 2 * n_obj)``.
    """
    n_instances = check_int("n_instances", n_instances, low=1)
    n_nodes = check_int("n_nodes", n_nodes, low=3)
    n_obj = check_int("n_obj", n_obj, low=1)
    rng = np.random.default_rng(seed)
    return rng.random((n_instances, n_nodes, 2 * n_obj)).astype(np.float32)


def uniform_prefs(n_prefs: int, n_obj: int = 2) -> np.ndarray:
    """Evenly spaced preferences on the simplex.

    For M = 2: ``(i / (P - 1), 1 - i / (P - 1))``, ``i = 0..P-1`` (101 gives PMOCO's
    set). For M = 3: the simplex lattice with ``H`` divisions, where ``P`` must be
    ``(H + 1)(H + 2) / 2``.

    Returns:
        float64 array of shape ``(P, M)``.

    Raises:
        ValueError: If ``n_prefs`` does not fit the lattice for M = 3, or M > 3.
    """
    n_prefs = check_int("n_prefs", n_prefs, low=1)
    n_obj = check_int("n_obj", n_obj, low=1, high=3)
    if n_obj == 1:
        return np.ones((n_prefs, 1))
    if n_obj == 2:
        if n_prefs == 1:
            return np.array([[0.5, 0.5]])
        a = np.linspace(0.0, 1.0, n_prefs)
        return np.stack([a, 1.0 - a], axis=1)
    h = round((np.sqrt(8 * n_prefs + 1) - 3) / 2)
    if (h + 1) * (h + 2) // 2 != n_prefs:
        raise ValueError(
            f"n_prefs must be a triangular number (H+1)(H+2)/2 for n_obj = 3, got {n_prefs}"
        )
    pts = [(i / h, j / h, (h - i - j) / h) for i in range(h + 1) for j in range(h + 1 - i)]
    return np.asarray(pts, dtype=float)


def distance_matrices(coords: torch.Tensor) -> torch.Tensor:
    """The M Euclidean distance matrices of a batch.

    Args:
        coords: ``(B, n, 2M)``.

    Returns:
        ``(B, M, n, n)``, same dtype and device.
    """
    b, n, two_m = coords.shape
    xy = coords.view(b, n, two_m // 2, 2).permute(0, 2, 1, 3)  # (B, M, n, 2)
    diff = xy.unsqueeze(3) - xy.unsqueeze(2)
    return diff.pow(2).sum(-1).clamp_min(0).sqrt()


def _check_nodes(nodes: Any, n_nodes: int, name: str, device: torch.device) -> torch.Tensor:
    """``nodes`` as a long tensor of integer node indices in ``0..n_nodes-1`` (else ValueError)."""
    t = _as_real_tensor(nodes, name).to(device)
    if t.is_floating_point():
        if not bool((t == t.round()).all()):
            raise ValueError(f"{name} must hold integer node indices, got non-integer values")
    elif t.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer node indices, got dtype bool")
    t = t.long()
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= n_nodes):
        raise ValueError(
            f"{name} must hold node indices in 0..{n_nodes - 1}, "
            f"got values in [{int(t.min())}, {int(t.max())}]"
        )
    return t


def tour_costs(coords: Any, tours: Any) -> torch.Tensor:
    """Objective values (closed tour lengths) of tours.

    Args:
        coords: ``(B, n, 2M)``.
        tours: Long tensor of node indices, ``(B, P, n)`` (P tours per instance) or
            ``(B, n)``; each row a permutation of ``0..n-1``.

    Returns:
        ``(B, P, M)`` (or ``(B, M)`` for 2-D ``tours``): the length of each closed tour
        under each objective's coordinates.

    Raises:
        ValueError: On bad ``coords`` (see :func:`check_coords`), ``tours`` of the wrong
            shape, or entries that are not integer node indices in ``0..n-1``.
    """
    x = check_coords(coords)
    t = _check_nodes(tours, x.shape[1], "tours", x.device)
    squeeze = t.dim() == 2
    if squeeze:
        t = t.unsqueeze(1)
    b, n, two_m = x.shape
    if t.dim() != 3 or t.shape[0] != b or t.shape[2] != n:
        raise ValueError(f"tours must have shape (B, P, n) = ({b}, P, {n}), got {tuple(t.shape)}")
    p = t.shape[1]
    pts = torch.gather(
        x.unsqueeze(1).expand(b, p, n, two_m), 2, t.unsqueeze(-1).expand(b, p, n, two_m)
    )
    nxt = pts.roll(-1, dims=2)
    seg = (pts - nxt).view(b, p, n, two_m // 2, 2).pow(2).sum(-1).sqrt()  # (B, P, n, M)
    out = seg.sum(2)
    return out.squeeze(1) if squeeze else out


def scalarize(
    objectives: torch.Tensor,
    prefs: torch.Tensor,
    method: str = "tchebycheff",
    ideal: float | torch.Tensor = 0.0,
) -> torch.Tensor:
    """Scalarized cost of objective vectors under preferences (lower is better).

    Tchebycheff: ``max_m lambda_m |f_m - z_m|``; weighted sum: ``sum_m lambda_m f_m``.

    Args:
        objectives: ``(..., M)``.
        prefs: broadcastable to ``objectives``, ``(..., M)``.
        method: ``"tchebycheff"`` or ``"weighted_sum"``.
        ideal: The ideal point ``z`` of Tchebycheff (scalar or ``(M,)``); 0 for tour lengths.

    Returns:
        ``objectives.shape[:-1]`` (a tensor; arrays are converted).

    Raises:
        ValueError: On an unknown ``method`` or ``prefs`` whose last axis is not M.
    """
    check_choice("method", method, SCALARIZATIONS)
    objectives = _as_real_tensor(objectives, "objectives")
    prefs = _as_real_tensor(prefs, "prefs").to(objectives.device)
    if objectives.dim() < 1 or prefs.dim() < 1 or prefs.shape[-1] != objectives.shape[-1]:
        raise ValueError(
            f"prefs (shape {tuple(prefs.shape)}) must have the last axis M of "
            f"objectives (shape {tuple(objectives.shape)})"
        )
    if method == "weighted_sum":
        return (prefs * objectives).sum(-1)
    return (prefs * (objectives - ideal).abs()).amax(-1)


def is_tour(tours: Any, n_nodes: int) -> bool:
    """Whether every row of ``tours`` (``(..., n)``) is a permutation of ``0..n-1``.

    Non-integer entries (e.g. ``0.5``) make it False, not truncated.
    """
    n_nodes = check_int("n_nodes", n_nodes, low=1)
    t = _as_real_tensor(tours, "tours")
    if t.dim() < 1 or t.shape[-1] != n_nodes:
        return False
    if t.is_floating_point() and not bool((t == t.round()).all()):
        return False
    t = t.long()
    ref = torch.arange(n_nodes, device=t.device)
    return bool((t.sort(-1).values == ref).all())


def pareto_front(objectives: Any) -> np.ndarray:
    """The nondominated points (minimization) of a set, duplicates removed.

    Args:
        objectives: ``(N, M)`` array.

    Returns:
        ``(K, M)`` float64 array of the nondominated rows, sorted by the first objective.

    Raises:
        ValueError: If ``objectives`` is not 2-D, is empty, or has NaN.
    """
    f = _as_front(objectives, "objectives")
    f = np.unique(f, axis=0)
    keep = np.ones(len(f), dtype=bool)
    for i in range(len(f)):
        if not keep[i]:
            continue
        dominated = np.all(f[i] <= f, axis=1) & np.any(f[i] < f, axis=1)
        keep &= ~dominated
    out = f[keep]
    return out[np.lexsort(out.T[::-1])]


def _as_front(points: Any, name: str) -> np.ndarray:
    f = np.asarray(
        points.detach().cpu() if isinstance(points, torch.Tensor) else points, dtype=float
    )
    if f.ndim != 2 or f.shape[0] < 1 or f.shape[1] < 1:
        raise ValueError(f"{name} must be a non-empty (N, M) array, got shape {f.shape}")
    if not np.isfinite(f).all():
        raise ValueError(f"{name} contains NaN or inf")
    return f


def _hv(points: np.ndarray, ref: np.ndarray) -> float:
    """Exact hypervolume by slicing along the last objective (points strictly below ref)."""
    m = points.shape[1]
    if len(points) == 0:
        return 0.0
    if m == 1:
        return float(ref[0] - points[:, 0].min())
    if m == 2:
        p = points[np.lexsort((points[:, 1], points[:, 0]))]
        vol, best_y = 0.0, ref[1]
        for x, y in p:
            if y < best_y:
                vol += (ref[0] - x) * (best_y - y)
                best_y = y
        return float(vol)
    order = np.argsort(points[:, -1])
    p = points[order]
    vol = 0.0
    for k in range(len(p)):
        upper = p[k + 1, -1] if k + 1 < len(p) else ref[-1]
        depth = upper - p[k, -1]
        if depth > 0:
            vol += depth * _hv(p[: k + 1, :-1], ref[:-1])
    return float(vol)


def hypervolume(F: Any, ref: Any, ideal: Any | None = None) -> float:
    """Hypervolume dominated by a set of points (minimization) up to a reference point.

    Exact: a sweep in 2-D (O(N log N)) and slicing along the last objective above
    (fine for the 10-1,000-point fronts of MOCO). With ``ideal`` the volume is divided
    by the box ``prod(ref - ideal)`` (PMOCO's normalized HV, in [0, 1]).

    Args:
        F: ``(N, M)`` objective vectors; points not strictly below ``ref`` in every
            objective add nothing.
        ref: ``(M,)`` reference point.
        ideal: Optional ``(M,)`` ideal point for normalization.

    Returns:
        The (normalized) hypervolume, a float >= 0.

    Raises:
        ValueError: On shapes that disagree, NaN, or ``ideal`` not below ``ref``.

    Example:
        >>> hypervolume([[1.0, 2.0], [2.0, 1.0]], ref=[3.0, 3.0])
        3.0
    """
    f = _as_front(F, "F")
    r = np.asarray(ref, dtype=float).reshape(-1)
    if r.shape[0] != f.shape[1] or not np.isfinite(r).all():
        raise ValueError(f"ref must be finite with {f.shape[1]} entries, got {r.tolist()}")
    inside = f[np.all(f < r, axis=1)]
    if len(inside) > 1:
        inside = pareto_front(inside)
    vol = _hv(inside, r)
    if ideal is not None:
        z = np.asarray(ideal, dtype=float).reshape(-1)
        if z.shape != r.shape or not np.all(z < r):
            raise ValueError(
                f"ideal must have {r.shape[0]} entries, each below ref, got {z.tolist()}"
            )
        vol /= float(np.prod(r - z))
    return float(vol)


class MOTSPEnv:
    """A batched multi-objective TSP environment (torch): state, masks, tour costs.

    ``B`` instances, ``P`` parallel rollouts each (POMO: one per start node). A rollout
    starts at a node given by :meth:`reset` and visits one unvisited node per
    :meth:`step`; after ``n - 1`` steps every rollout is a tour and :meth:`objectives`
    returns its M lengths.

    Args:
        coords: ``(B, n, 2M)`` coordinates.
        n_rollouts: Rollouts per instance (default ``n``: one per start node).

    Attributes:
        visited: bool ``(B, P, n)``; ``mask`` is its logical negation (allowed moves).
        current: long ``(B, P)``, the last visited node; ``first`` the start node.
        tours: long ``(B, P, t)``, the nodes visited so far.

    Example:
        >>> env = MOTSPEnv(torch.rand(2, 5, 4))
        >>> env.reset()
        >>> while not env.done:
        ...     env.step(env.mask.float().argmax(-1))
        >>> env.objectives().shape
        torch.Size([2, 5, 2])
    """

    def __init__(self, coords: Any, n_rollouts: int | None = None) -> None:
        self.coords = check_coords(coords)
        self.batch, self.n_nodes, two_m = self.coords.shape
        self.n_obj = two_m // 2
        self.n_rollouts = (
            self.n_nodes if n_rollouts is None else check_int("n_rollouts", n_rollouts, low=1)
        )
        self.reset()

    def reset(self, start: torch.Tensor | None = None) -> None:
        """Start each rollout at ``start`` (``(B, P)`` long; default: rollout p at node p mod n)."""
        b, p, n = self.batch, self.n_rollouts, self.n_nodes
        dev = self.coords.device
        if start is None:
            start = (torch.arange(p, device=dev) % n).expand(b, p)
        start = _check_nodes(start, n, "start", dev)
        if start.shape != (b, p):
            raise ValueError(f"start must have shape ({b}, {p}), got {tuple(start.shape)}")
        self.first = start.clone()
        self.current = start.clone()
        self.visited = torch.zeros(b, p, n, dtype=torch.bool, device=dev)
        self.visited.scatter_(2, start.unsqueeze(-1), True)
        self.tours = start.unsqueeze(-1).clone()

    @property
    def mask(self) -> torch.Tensor:
        """Bool ``(B, P, n)``: True where a node may be visited next."""
        return ~self.visited

    @property
    def done(self) -> bool:
        """Whether every rollout has visited every node."""
        return self.tours.shape[-1] >= self.n_nodes

    def step(self, action: torch.Tensor) -> None:
        """Visit ``action`` (``(B, P)`` long) next.

        Raises:
            ValueError: If ``action`` is not ``(B, P)`` node indices in ``0..n-1``, or an
                action names a visited node.
        """
        a = _check_nodes(action, self.n_nodes, "action", self.coords.device)
        if a.shape != (self.batch, self.n_rollouts):
            raise ValueError(
                f"action must have shape ({self.batch}, {self.n_rollouts}), got {tuple(a.shape)}"
            )
        if bool(self.visited.gather(2, a.unsqueeze(-1)).any()):
            raise ValueError("action revisits a node (masked); pick among env.mask")
        self.visited.scatter_(2, a.unsqueeze(-1), True)
        self.current = a
        self.tours = torch.cat([self.tours, a.unsqueeze(-1)], dim=-1)

    def objectives(self) -> torch.Tensor:
        """``(B, P, M)`` lengths of the finished tours.

        Raises:
            RuntimeError: If the tours are not finished.
        """
        if not self.done:
            raise RuntimeError("tours are not finished; call step until env.done")
        return tour_costs(self.coords, self.tours)
