"""A two-layer GCN that returns (logits, hidden), the model shape DREAM trains."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from icml26_core.validation import check_float, check_int
from torch import nn

__all__ = ["GCN"]


class GCN(nn.Module):
    """Two ``torch_geometric.nn.GCNConv`` layers (Kipf & Welling 2017).

    ``forward(x, edge_index)`` returns ``(logits, hidden)``: float (N, out_channels) and
    the float (N, hidden_channels) ReLU output of the first layer, which DREAM's node
    proximity standard compares by cosine similarity.

    Args:
        in_channels: Number of input features.
        hidden_channels: Width of the hidden layer.
        out_channels: Number of classes.
        dropout: Dropout probability on the input and hidden features.
    """

    def __init__(
        self, in_channels: int, hidden_channels: int, out_channels: int, dropout: float = 0.5
    ) -> None:
        super().__init__()
        from torch_geometric.nn import GCNConv

        self.conv1 = GCNConv(
            check_int("in_channels", in_channels, low=1),
            check_int("hidden_channels", hidden_channels, low=1),
        )
        self.conv2 = GCNConv(hidden_channels, check_int("out_channels", out_channels, low=2))
        self.dropout = check_float("dropout", dropout, low=0.0, high=1.0, high_inclusive=False)

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(logits, hidden)``."""
        h = F.dropout(x, self.dropout, self.training)
        h = F.relu(self.conv1(h, edge_index))
        out = self.conv2(F.dropout(h, self.dropout, self.training), edge_index)
        return out, h
