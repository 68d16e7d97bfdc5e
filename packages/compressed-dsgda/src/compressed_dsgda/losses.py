"""Min-max losses: the square-loss AUC saddle and a regularized group-DRO regression.

Each is an ``nn.Module`` whose ``forward`` returns ``f(x, y)``, the objective that the
primal variables minimize and the dual ones maximize; ``primal_parameters()`` and
``dual_parameters()`` split its own parameters (the model's weights are the caller's).
With ``n_nodes`` given, the loss's parameters are stacked with one row per node and the
inputs carry a leading node dimension: ``forward`` returns the *sum* over nodes of each
node's mean objective, so one ``backward()`` gives every node its own local gradient
(what :class:`~compressed_dsgda.CompressedDSGDA` reads in a ``SimulatedNetwork``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_float, check_int
from torch import nn

__all__ = ["AUCMarginMinMax", "DRORegression", "auc_margin_objective", "roc_auc"]


def auc_margin_objective(
    scores: Any, labels: Any, a: Any, b: Any, alpha: Any, p: float, margin: float = 1.0
) -> Any:
    """Per-sample square-loss AUC saddle (Ying, Wen and Lyu 2016; margin form of Yuan et al. 2021).

    ``F = (1-p)(h-a)^2 [y=1] + p (h-b)^2 [y=0] + 2 alpha (p(1-p) m + p h [y=0] - (1-p) h [y=1])
    - p(1-p) alpha^2``; its mean over the data is convex in ``(h, a, b)``, concave in
    ``alpha``, and its min-max value is ``p(1-p)`` times the square AUC surrogate
    ``E[(m - h(x+) + h(x-))^2]`` (up to the variances), so minimizing it maximizes AUC.

    Args:
        scores: Model outputs ``h``, float (..., B).
        labels: 0/1 labels, same shape as ``scores`` (any dtype).
        a: Mean score of the positives, broadcastable against ``scores[..., :1]``.
        b: Mean score of the negatives, likewise.
        alpha: The dual variable, likewise.
        p: Fraction of positives in the data, in (0, 1).
        margin: ``m`` (1 gives Ying et al.'s square loss).

    Returns:
        ``F`` per sample, float (..., B).
    """
    pos = (labels > 0.5).to(scores.dtype)
    neg = 1.0 - pos
    return (
        (1 - p) * (scores - a) ** 2 * pos
        + p * (scores - b) ** 2 * neg
        + 2 * alpha * (p * (1 - p) * margin + p * scores * neg - (1 - p) * scores * pos)
        - p * (1 - p) * alpha**2
    )


class AUCMarginMinMax(nn.Module):
    """The square-loss AUC min-max objective ``min_{w, a, b} max_alpha E F`` as a module.

    Args:
        p: Fraction of positives in the (pooled) training data, in (0, 1). With a
            heterogeneous split keep the pooled value on every node, so the nodes'
            objectives average to the pooled one.
        margin: ``m`` > 0 (1: Ying et al. 2016).
        n_nodes: None for one node (``a``, ``b``, ``alpha`` scalars); else stacked
            (shape (n,)) and ``forward`` takes (n, B) inputs.

    Attributes:
        a, b: Primal: the score means of positives and negatives, float32.
        alpha: Dual variable.

    Raises:
        ValueError: If ``p`` is outside (0, 1), ``margin`` <= 0, or ``n_nodes`` < 1;
            (``forward``) if the shapes disagree or the scores are not finite.

    Example:
        >>> import torch
        >>> loss = AUCMarginMinMax(p=0.5)
        >>> h, y = torch.tensor([2.0, -1.0]), torch.tensor([1, 0])
        >>> round(float(loss(h, y).detach()), 4)           # at a = b = alpha = 0
        1.25
    """

    def __init__(self, p: float, margin: float = 1.0, n_nodes: int | None = None) -> None:
        super().__init__()
        self.p = check_float("p", p, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        self.margin = check_float("margin", margin, low=0.0, low_inclusive=False)
        self.n_nodes = None if n_nodes is None else check_int("n_nodes", n_nodes, low=1)
        shape = () if n_nodes is None else (self.n_nodes,)
        self.a = nn.Parameter(torch.zeros(shape))
        self.b = nn.Parameter(torch.zeros(shape))
        self.alpha = nn.Parameter(torch.zeros(shape))

    def primal_parameters(self) -> list[nn.Parameter]:
        """``[a, b]`` (add the model's parameters)."""
        return [self.a, self.b]

    def dual_parameters(self) -> list[nn.Parameter]:
        """``[alpha]``."""
        return [self.alpha]

    def forward(self, scores: Any, labels: Any) -> Any:
        """Mean of ``F`` over the batch (summed over nodes when stacked).

        Args:
            scores: float (B,), or (n, B) when stacked.
            labels: 0/1, same shape.

        Returns:
            A scalar tensor.

        Raises:
            TypeError: If an input is not a torch tensor.
            ValueError: If the shapes disagree or a score is NaN or inf.
        """
        for name, t in (("scores", scores), ("labels", labels)):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if scores.shape != labels.shape:
            raise ValueError(
                f"scores and labels must have the same shape, got {tuple(scores.shape)} "
                f"and {tuple(labels.shape)}"
            )
        want = 1 if self.n_nodes is None else 2
        if scores.dim() != want or (want == 2 and scores.shape[0] != self.n_nodes):
            expected = "(B,)" if self.n_nodes is None else f"({self.n_nodes}, B)"
            raise ValueError(f"scores must have shape {expected}, got {tuple(scores.shape)}")
        if not bool(torch.isfinite(scores).all()):
            raise ValueError("scores contain NaN or inf")
        a, b, al = (t.unsqueeze(-1) if t.dim() else t for t in (self.a, self.b, self.alpha))
        F = auc_margin_objective(scores, labels, a, b, al, self.p, self.margin)
        return F.mean(dim=-1).sum()


class DRORegression(nn.Module):
    """Regularized group-DRO least squares (a min-max over group weights ``q``).

    ``f = sum_g q_g L_g - (lam/2)||q - 1/G||^2`` (+ ridge).

    ``L_g(theta)`` is the mean squared error on the batch rows of group ``g``, plus
    ``(mu/2)||theta||^2``. The dual ``q`` is unconstrained (a Lagrangian relaxation of
    the simplex: ours), so the objective is ``mu``-strongly convex in ``theta`` and
    ``lam``-strongly concave in ``q``, with ``q*(theta) = 1/G + L(theta)/lam``.

    Args:
        n_features: ``d`` >= 1.
        n_groups: ``G`` >= 1.
        lam: Dual regularization > 0.
        mu: Ridge on ``theta`` >= 0.
        n_nodes: None for one node; else ``theta`` is (n, d), ``q`` is (n, G) and the
            inputs carry the node dimension.

    Attributes:
        theta: Primal weights (d,) or (n, d).
        q: Dual group weights (G,) or (n, G), starting at ``1/G``.

    Example:
        >>> import torch
        >>> loss = DRORegression(2, 2, lam=1.0)
        >>> X, t, g = torch.ones(2, 2), torch.tensor([1.0, 3.0]), torch.tensor([0, 1])
        >>> round(float(loss(X, t, g).detach()), 4)         # 0.5 * 1 + 0.5 * 9
        5.0
    """

    def __init__(
        self,
        n_features: int,
        n_groups: int,
        *,
        lam: float = 1.0,
        mu: float = 0.0,
        n_nodes: int | None = None,
    ) -> None:
        super().__init__()
        self.n_features = check_int("n_features", n_features, low=1)
        self.n_groups = check_int("n_groups", n_groups, low=1)
        self.lam = check_float("lam", lam, low=0.0, low_inclusive=False)
        self.mu = check_float("mu", mu, low=0.0)
        self.n_nodes = None if n_nodes is None else check_int("n_nodes", n_nodes, low=1)
        lead = () if n_nodes is None else (self.n_nodes,)
        self.theta = nn.Parameter(torch.zeros(*lead, self.n_features))
        self.q = nn.Parameter(torch.full((*lead, self.n_groups), 1.0 / self.n_groups))

    def primal_parameters(self) -> list[nn.Parameter]:
        """``[theta]``."""
        return [self.theta]

    def dual_parameters(self) -> list[nn.Parameter]:
        """``[q]``."""
        return [self.q]

    def forward(self, X: Any, targets: Any, groups: Any) -> Any:
        """``f(theta, q)`` on a batch (summed over nodes when stacked).

        Args:
            X: float (B, d), or (n, B, d) when stacked.
            targets: float (B,) or (n, B).
            groups: int group index in ``[0, G)`` per row, (B,) or (n, B).

        Returns:
            A scalar tensor.

        Raises:
            TypeError: If an input is not a torch tensor.
            ValueError: If the shapes disagree, the batch is empty, or a group index is
                outside ``[0, G)``.
        """
        for name, t in (("X", X), ("targets", targets), ("groups", groups)):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        lead = 1 if self.n_nodes is None else 2
        if X.dim() != lead + 1 or X.shape[-1] != self.n_features:
            raise ValueError(
                f"X must have {lead + 1} dims ending in {self.n_features}, got {tuple(X.shape)}"
            )
        if targets.shape != X.shape[:-1] or groups.shape != X.shape[:-1]:
            raise ValueError("targets and groups must have X's shape without its last dimension")
        if X.shape[-2] == 0:
            raise ValueError("X has no rows: the batch must hold at least one row")
        if int(groups.min()) < 0 or int(groups.max()) >= self.n_groups:
            raise ValueError(f"groups must lie in [0, {self.n_groups}), got values outside")
        pred = (X * self.theta.unsqueeze(-2)).sum(-1)
        sq = (pred - targets) ** 2
        onehot = torch.nn.functional.one_hot(groups.long(), self.n_groups).to(sq.dtype)
        counts = onehot.sum(-2).clamp(min=1.0)
        group_loss = (sq.unsqueeze(-1) * onehot).sum(-2) / counts  # (..., G)
        f = (
            (self.q * group_loss).sum(-1)
            - 0.5 * self.lam * ((self.q - 1.0 / self.n_groups) ** 2).sum(-1)
            + 0.5 * self.mu * (self.theta**2).sum(-1)
        )
        return f.sum()


def roc_auc(scores: Any, labels: Any) -> float:
    """Area under the ROC curve (Mann-Whitney, ties counted half).

    Args:
        scores: float (B,), numpy or torch.
        labels: 0/1 (B,), both classes present.

    Returns:
        AUC in [0, 1].

    Raises:
        ValueError: If a class is missing, the shapes differ, or a score is NaN or inf.
    """
    s = np.asarray(scores.detach().cpu() if hasattr(scores, "detach") else scores, dtype=np.float64)
    y = np.asarray(labels.detach().cpu() if hasattr(labels, "detach") else labels) > 0.5
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"scores and labels must be 1-D of one shape, got {s.shape}, {y.shape}")
    if not np.isfinite(s).all():
        raise ValueError("scores contain NaN or inf")
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("labels must contain both classes")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    # average ranks of ties
    _, first, counts = np.unique(sorted_s, return_index=True, return_counts=True)
    avg = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(avg, counts)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))
