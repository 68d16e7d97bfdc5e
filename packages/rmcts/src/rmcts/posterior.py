"""The regularized posterior policy of Grill et al. (2020), vectorized.

Grill et al. show that AlphaZero's visit distribution tracks the solution of

    pi_bar = argmax_{y in simplex} q . y - lambda_N * KL(pi, y),

whose closed form is ``pi_bar = lambda_N * pi / (alpha - q)`` with the scalar
``alpha`` chosen so that ``pi_bar`` sums to one, and
``lambda_N = c * sqrt(N) / (|A| + N)``. Here ``alpha`` is found for a whole
batch of nodes at once by Newton's method on the convex, decreasing function
``g(alpha) = sum_b lambda * pi_b / (alpha - q_b) - 1``, started at the left end of
Grill et al.'s bracket so that the iterates increase monotonically to the root.
"""

from __future__ import annotations

import numpy as np

__all__ = ["lambda_n", "pi_bar", "regularized_policy"]

_MAX_ITER = 60


def _as_float_array(value: object, name: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise TypeError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    return arr.astype(np.float64, copy=True)


def lambda_n(n: float | np.ndarray, num_actions: int | np.ndarray, c: float = 1.0) -> np.ndarray:
    """Regularization strength ``lambda_N = c * sqrt(N) / (|A| + N)`` of Grill et al.

    Args:
        n: Total visit count ``N = sum_b n_b`` of the node(s), shape ``()`` or ``(B,)``, >= 0.
        num_actions: Number of legal actions ``|A|`` of the node(s), >= 1, broadcastable to ``n``.
        c: The exploration constant (``c_puct``), >= 0.

    Returns:
        float64 array of the broadcast shape of ``n`` and ``num_actions``.

    Raises:
        ValueError: If ``n`` is negative or not finite, ``num_actions`` < 1, or ``c`` < 0.

    References:
        Grill et al., "Monte-Carlo tree search as regularized policy optimization", ICML 2020.
    """
    n_arr = _as_float_array(n, "n")
    a_arr = _as_float_array(num_actions, "num_actions")
    if not np.all(np.isfinite(n_arr)) or np.any(n_arr < 0):
        raise ValueError(f"n (visit counts) must be finite and >= 0, got {n!r}")
    if np.any(a_arr < 1):
        raise ValueError(f"num_actions must be >= 1, got {num_actions!r}")
    if not np.isfinite(c) or c < 0:
        raise ValueError(f"c must be finite and >= 0, got {c!r}")
    return c * np.sqrt(n_arr) / (a_arr + n_arr)


def regularized_policy(
    prior: np.ndarray,
    q: np.ndarray,
    lam: float | np.ndarray,
    mask: np.ndarray | None = None,
    *,
    tol: float = 1e-10,
) -> np.ndarray:
    """Solve ``argmax_y q . y - lam * KL(prior, y)`` over the simplex, row by row.

    Actions outside ``mask`` or with zero prior get probability exactly 0. With
    ``lam == 0`` the solution is greedy: all mass on the best action(s) in the
    prior's support, ties split in proportion to the prior (the limit ``lam -> 0+``).

    Args:
        prior: Prior policy, shape ``(..., A)``, nonnegative; it is renormalized over
            ``mask``.
        q: Action values, shape ``(..., A)``; entries outside ``mask`` are ignored
            (they may be NaN or inf), legal ones must be finite.
        lam: Regularization strength(s) >= 0, shape broadcastable to ``prior.shape[:-1]``.
        mask: Boolean legal-action mask of shape ``(..., A)``; all actions legal if None.
        tol: Absolute tolerance on ``sum(pi_bar) - 1`` for the root-finder.

    Returns:
        float64 array ``pi_bar`` of shape ``(..., A)``; each row sums to 1.

    Raises:
        ValueError: On empty action sets, shape mismatch, negative or NaN prior, non-finite
            legal q, negative lam, or a row whose prior has no mass on legal actions.
        TypeError: If an input is not numeric.

    References:
        Grill et al., "Monte-Carlo tree search as regularized policy optimization", ICML 2020,
        Appendix B (the closed form and the bracket of ``alpha``).

    Example:
        >>> import numpy as np
        >>> p = regularized_policy(np.array([0.5, 0.5]), np.array([1.0, 0.0]), 0.5)
        >>> round(float(p.sum()), 12), bool(p[0] > 0.5)
        (1.0, True)
    """
    prior_arr = _as_float_array(prior, "prior")
    q_arr = _as_float_array(q, "q")
    if prior_arr.ndim == 0 or prior_arr.shape[-1] == 0:
        raise ValueError(
            f"prior must have a nonempty last (action) axis, got shape {prior_arr.shape}"
        )
    if q_arr.shape != prior_arr.shape:
        raise ValueError(f"q must have the shape of prior {prior_arr.shape}, got {q_arr.shape}")
    if mask is None:
        legal = np.ones(prior_arr.shape, dtype=bool)
    else:
        legal = np.asarray(mask)
        if legal.dtype != bool:
            raise TypeError(f"mask must be a boolean array, got dtype {legal.dtype}")
        if legal.shape != prior_arr.shape:
            raise ValueError(
                f"mask must have the shape of prior {prior_arr.shape}, got {legal.shape}"
            )
    if not np.any(legal):
        raise ValueError("mask leaves no legal action (empty action set)")
    if np.any(~legal.any(axis=-1)):
        raise ValueError("every row of mask needs at least one legal action (empty action set)")
    if np.any(np.isnan(prior_arr[legal])) or np.any(prior_arr[legal] < 0):
        raise ValueError("prior must be nonnegative and not NaN on legal actions")
    if not np.all(np.isfinite(q_arr[legal])):
        raise ValueError("q must be finite on legal actions (got NaN or inf)")
    lam_arr = _as_float_array(lam, "lam")
    if not np.all(np.isfinite(lam_arr)) or np.any(lam_arr < 0):
        raise ValueError(f"lam must be finite and >= 0, got {lam!r}")
    batch_shape = prior_arr.shape[:-1]
    try:
        lam_arr = np.broadcast_to(lam_arr, batch_shape).copy()
    except ValueError:
        raise ValueError(
            f"lam of shape {lam_arr.shape} does not broadcast to the batch shape {batch_shape}"
        ) from None

    num_actions = prior_arr.shape[-1]
    p = np.where(legal, prior_arr, 0.0).reshape(-1, num_actions)
    total = p.sum(axis=1, keepdims=True)
    if np.any(total <= 0) or not np.all(np.isfinite(total)):
        raise ValueError("prior must have positive finite mass on the legal actions of every row")
    p = p / total
    support = p > 0
    qv = np.where(support, q_arr.reshape(-1, num_actions), -np.inf)
    lam_flat = lam_arr.reshape(-1)
    out = np.zeros_like(p)

    greedy = lam_flat <= 0
    if np.any(greedy):
        qg, pg = qv[greedy], p[greedy]
        best = qg >= qg.max(axis=1, keepdims=True)
        w = np.where(best, pg, 0.0)
        out[greedy] = w / w.sum(axis=1, keepdims=True)
    rows = ~greedy
    if np.any(rows):
        out[rows] = _solve_alpha(p[rows], qv[rows], lam_flat[rows], support[rows], tol)
    return out.reshape(prior_arr.shape)


def _solve_alpha(
    p: np.ndarray, q: np.ndarray, lam: np.ndarray, support: np.ndarray, tol: float
) -> np.ndarray:
    """Find alpha per row by Newton from the left end of its bracket; return pi_bar.

    On ``(max q, inf)`` the function ``g`` is convex and decreasing, so Newton started at
    ``lo`` (where ``g >= 0``) increases monotonically to the root and never overshoots;
    clipping at ``hi`` only guards against rounding.
    """
    lp = np.where(support, lam[:, None] * p, 0.0)
    # Work with t = alpha - max q and the gaps d = max q - q >= 0, so that the best action's
    # gap is t exactly (no cancellation when lam is tiny). Actions outside the support sit
    # at d = inf: their term is 0.
    qs = np.where(support, q, -np.inf)
    d = np.max(qs, axis=1, keepdims=True) - qs
    # g(lo) >= 0 because the best term alone reaches 1; g(hi) <= 0 because every term is
    # at most p_b when alpha - q_b >= lam (Grill et al., App. B).
    t = np.max(lp - d, axis=1)
    hi = lam
    for _ in range(_MAX_ITER):
        inv = 1.0 / (t[:, None] + d)
        terms = lp * inv
        g = terms.sum(axis=1) - 1.0
        if np.max(np.abs(g)) <= tol:
            break
        slope = (terms * inv).sum(axis=1)
        t = np.minimum(t + g / slope, hi)
    pol = lp / (t[:, None] + d)
    return pol / pol.sum(axis=1, keepdims=True)


def _pi_bar_unchecked(
    prior: np.ndarray, q: np.ndarray, n: np.ndarray, c: float, mask: np.ndarray
) -> np.ndarray:
    """:func:`pi_bar` for 2-D inputs already validated by the caller (the tree search).

    ``prior`` must be normalized over ``mask`` and positive there, ``q`` finite there.
    """
    lam = c * np.sqrt(n) / (mask.sum(axis=1) + n)
    out = np.empty_like(prior)
    greedy = lam <= 0
    if np.any(greedy):
        qg = np.where(mask[greedy], q[greedy], -np.inf)
        w = np.where(qg >= qg.max(axis=1, keepdims=True), prior[greedy], 0.0)
        out[greedy] = w / w.sum(axis=1, keepdims=True)
        rows = ~greedy
        if np.any(rows):
            out[rows] = _solve_alpha(prior[rows], q[rows], lam[rows], mask[rows], 1e-10)
        return out
    return _solve_alpha(prior, q, lam, mask, 1e-10)


def pi_bar(
    prior: np.ndarray,
    q: np.ndarray,
    n: float | np.ndarray,
    c: float = 1.0,
    mask: np.ndarray | None = None,
) -> np.ndarray:
    """Regularized posterior policy ``pi_bar`` at total visit count ``n`` (Grill et al., 2020).

    ``pi_bar = lambda_N * prior / (alpha - q)`` with ``lambda_N = c * sqrt(N) / (|A| + N)``,
    where ``|A|`` is the number of legal actions of each row.

    Args:
        prior: Prior policy, shape ``(..., A)``, nonnegative.
        q: Action values, shape ``(..., A)``, finite on legal actions.
        n: Total visit count(s) ``N`` >= 0, shape broadcastable to ``prior.shape[:-1]``.
        c: Exploration constant ``c`` >= 0.
        mask: Boolean legal-action mask, shape ``(..., A)``; all legal if None.

    Returns:
        float64 ``(..., A)`` posterior, zero on illegal actions, rows summing to 1.

    Raises:
        ValueError: See :func:`regularized_policy` and :func:`lambda_n`.

    References:
        Grill et al., "Monte-Carlo tree search as regularized policy optimization", ICML 2020.

    Example:
        >>> import numpy as np
        >>> p = pi_bar(np.full(3, 1 / 3), np.array([0.0, 0.5, -0.5]), n=10, c=1.25)
        >>> int(p.argmax())
        1
    """
    prior_arr = np.asarray(prior)
    if prior_arr.ndim == 0 or prior_arr.shape[-1] == 0:
        raise ValueError(
            f"prior must have a nonempty last (action) axis, got shape {prior_arr.shape}"
        )
    legal = np.ones(prior_arr.shape, dtype=bool) if mask is None else np.asarray(mask)
    if legal.shape != prior_arr.shape:
        raise ValueError(f"mask must have the shape of prior {prior_arr.shape}, got {legal.shape}")
    if legal.dtype != bool:
        raise TypeError(f"mask must be a boolean array, got dtype {legal.dtype}")
    if np.any(~legal.any(axis=-1)):
        raise ValueError("every row of mask needs at least one legal action (empty action set)")
    lam = lambda_n(n, legal.sum(axis=-1), c)
    return regularized_policy(prior, q, lam, mask)
