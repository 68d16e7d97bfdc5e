"""Peers from torch_geometric for the over-smoothing task: GCNII and PairNorm.

Needs ``torch_geometric`` (``pip install "dmol[repro]"``; the workspace's
``icml26-core[graphs-torch]`` extra). Imported lazily, so ``import dmol`` does not need it.
"""

from __future__ import annotations

import torch
from icml26_core.validation import check_float, check_int
from torch import nn

__all__ = ["GCNII", "use_pyg_pairnorm"]


def _pyg_nn():
    """``torch_geometric.nn``, or an ImportError that says how to install it."""
    try:
        import torch_geometric.nn as pyg_nn
    except ModuleNotFoundError as e:
        raise ImportError(
            'dmol.peers needs torch_geometric: pip install "dmol[repro]" (or torch-geometric)'
        ) from e
    return pyg_nn


class GCNII(nn.Module):
    """GCNII (Chen et al., ICML 2020) with ``torch_geometric.nn.GCN2Conv`` layers.

    The layout of torch_geometric's GCNII example: dropout, ``Linear(in_dim, dim)``,
    ReLU (this is ``x_0``), then ``depth`` layers of ``GCN2Conv(dim, alpha, theta,
    layer=l)`` each followed by ReLU and preceded by dropout, then dropout and a
    ``Linear(dim, out_dim)``. Trained end to end by backpropagation (a peer, not a
    DMoLNet).

    Call as ``model(x, edge_index, edge_weight)`` with dense float32 node features
    ``(n, in_dim)``; with ``edge_weight`` the edges are used as given
    (``normalize=False``: pass the GCN-normalised adjacency with self-loops, e.g.
    :func:`dmol.normalized_adjacency`'s indices and values); returns logits
    ``(n, out_dim)``.

    Args:
        in_dim, dim, out_dim: Input, hidden and output widths.
        depth: Number of ``GCN2Conv`` layers.
        alpha: Initial-residual weight (0.1 in the paper).
        theta: Identity-mapping strength, ``beta_l = log(theta / l + 1)`` (0.5).
        dropout: Dropout probability, in ``[0, 1)``.

    Raises:
        ImportError: If torch_geometric is not installed (``pip install "dmol[repro]"``).
        TypeError, ValueError: If a size is not an integer >= 1, or ``alpha``,
            ``theta`` or ``dropout`` is out of range.
    """

    def __init__(
        self,
        in_dim: int,
        dim: int,
        out_dim: int,
        depth: int,
        *,
        alpha: float = 0.1,
        theta: float = 0.5,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        GCN2Conv = _pyg_nn().GCN2Conv

        in_dim, dim = check_int("in_dim", in_dim, low=1), check_int("dim", dim, low=1)
        out_dim = check_int("out_dim", out_dim, low=1)
        depth = check_int("depth", depth, low=1)
        alpha = check_float("alpha", alpha, low=0.0, high=1.0)
        theta = check_float("theta", theta, low=0.0, low_inclusive=False)
        p = check_float("dropout", dropout, low=0.0, high=1.0, high_inclusive=False)
        self.lin_in = nn.Linear(in_dim, dim)
        self.convs = nn.ModuleList(
            GCN2Conv(dim, alpha, theta, layer=i + 1, normalize=False) for i in range(depth)
        )
        self.lin_out = nn.Linear(dim, out_dim)
        self.dropout = nn.Dropout(p)

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``x`` ``(n, in_dim)``, ``edge_index`` ``(2, E)`` -> logits ``(n, out_dim)``."""
        h = x_0 = torch.relu(self.lin_in(self.dropout(x)))
        for conv in self.convs:
            h = torch.relu(conv(self.dropout(h), x_0, edge_index, edge_weight))
        return self.lin_out(self.dropout(h))


def use_pyg_pairnorm(net: nn.Module, scale: float = 1.0) -> nn.Module:
    """Swap every :class:`dmol.PairNorm` in ``net`` for ``torch_geometric.nn.PairNorm``.

    Both compute the same "PN" normalisation; this makes the BP + PairNorm baseline
    the reference library's. Returns ``net`` (changed in place).

    Raises:
        ImportError: If torch_geometric is not installed (``pip install "dmol[repro]"``).
        TypeError, ValueError: If ``scale`` is not a number > 0.
    """
    PygPairNorm = _pyg_nn().PairNorm

    from dmol.models import GCNLayer

    for module in net.modules():
        if isinstance(module, GCNLayer) and module.norm is not None:
            module.norm = PygPairNorm(scale=check_float("scale", scale, low=0.0))
    return net
