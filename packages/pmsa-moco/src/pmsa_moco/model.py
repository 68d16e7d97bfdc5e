"""Preference-conditioned attention models for the M-objective TSP.

:class:`PMSAModel` is the paper's preference-modulated structural attention (our
reading, see the README): edge features from the M distance matrices, modulated by
the preference (FiLM), become one additive attention bias per head in every encoder
layer; after each layer the edges aggregate node context; the decoder adds the edge
bias from the current node to its compatibility scores. :class:`NodeOnlyModel` is
the same network without edge features (the ablation and the PMOCO-like baseline).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from icml26_core.validation import check_int
from torch import nn

from pmsa_moco.problem import distance_matrices

CLIP = 10.0  # logit clipping C * tanh(u) of the attention-model decoders (Kool et al.)


class EdgeAggregation(nn.Module):
    """``e_ij <- e_ij + MLP([h_i, h_j, e_ij])``: edges take in node context.

    The first layer of the MLP on the concatenation is applied as
    ``A h_i + B h_j + C e_ij`` (the same map, without building the ``(B, n, n, 2d + d_e)``
    tensor).
    """

    def __init__(self, d_model: int, d_edge: int) -> None:
        super().__init__()
        self.node_i = nn.Linear(d_model, d_edge)
        self.node_j = nn.Linear(d_model, d_edge, bias=False)
        self.edge = nn.Linear(d_edge, d_edge, bias=False)
        self.out = nn.Linear(d_edge, d_edge)

    def forward(self, h: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        """``h``: ``(B, n, d)``, ``e``: ``(B, n, n, d_e)`` -> updated ``e``."""
        z = self.node_i(h).unsqueeze(2) + self.node_j(h).unsqueeze(1) + self.edge(e)
        return e + self.out(F.relu(z))


class EncoderLayer(nn.Module):
    """Multi-head self-attention + feed-forward (post-norm), with an optional edge bias.

    Scores of head ``k``: ``q_i . k_j / sqrt(d_h) + w_k . e_ij + b_k``.
    """

    def __init__(
        self, d_model: int, n_heads: int, d_ff: int, d_edge: int | None, aggregate: bool = True
    ) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.norm2 = nn.LayerNorm(d_model)
        self.edge_bias = nn.Linear(d_edge, n_heads) if d_edge else None
        self.edge_agg = EdgeAggregation(d_model, d_edge) if d_edge and aggregate else None

    def forward(
        self, h: torch.Tensor, e: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``h``: ``(B, n, d)``, ``e``: ``(B, n, n, d_e)`` or None -> ``(h, e)``."""
        b, n, d = h.shape
        hd = d // self.n_heads
        q, k, v = self.qkv(h).view(b, n, 3, self.n_heads, hd).permute(2, 0, 3, 1, 4)
        mask = None
        if e is not None and self.edge_bias is not None:
            mask = self.edge_bias(e).permute(0, 3, 1, 2)  # (B, H, n, n), additive
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        h = self.norm1(h + self.proj(a.transpose(1, 2).reshape(b, n, d)))
        h = self.norm2(h + self.ff(h))
        if e is not None and self.edge_agg is not None:
            e = self.edge_agg(h, e)
        return h, e


class PMSAModel(nn.Module):
    """Preference-conditioned encoder-decoder with preference-modulated structural attention.

    Encoder input: node features ``x_i`` (the M coordinate pairs, ``(B, n, 2M)``) plus a
    preference embedding ``W_l lambda`` added to every node. Edge features (when
    ``edge_features``):

    ``e_ij = gamma(lambda) * MLP([d^1_ij, ..., d^M_ij, sum_m lambda_m d^m_ij]) + beta(lambda)``

    (FiLM with ``gamma = 1 + W_g lambda``), biasing every head of every layer and
    aggregating node context after each layer (:class:`EdgeAggregation`). Decoder
    (POMO): query ``W [mean_i h_i, h_first, h_current] + W_l' lambda``, one masked
    multi-head glimpse, then logits ``C tanh((g . h_j) / sqrt(d) + w . e_{current, j})``.

    Args:
        n_obj: Number of objectives M.
        d_model: Width of node embeddings (divisible by ``n_heads``).
        n_heads: Attention heads.
        n_layers: Encoder layers.
        d_ff: Feed-forward width (default ``4 * d_model``).
        d_edge: Width of edge features (``(B, n, n, d_edge)`` tensors: keep it <= 16 on
            CPU at n = 100).
        edge_features: False gives the node-only network (:class:`NodeOnlyModel`).
        edge_aggregation: False drops PMSA's part (2), the edge update after each layer
            (the edges stay their preference-modulated input embedding); for ablations.
        decoder_edge_bias: False drops the decoder's edge bias ``w . e_{current, j}``;
            for ablations. Both are ignored without ``edge_features``.

    Shapes:
        ``forward(coords, prefs)`` is not defined; use :meth:`encode` then
        :func:`pmsa_moco.rollout`, or :func:`pmsa_moco.solve`.

    Raises:
        ValueError: On non-positive sizes or ``d_model`` not divisible by ``n_heads``.

    References:
        The ICML 2026 abstract in ``shared/papers/pmsa-moco.md``; POMO (Kwon et al.,
        2020) and PMOCO (Lin et al., 2022) for the decoder and the preference conditioning.
    """

    def __init__(
        self,
        n_obj: int = 2,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 3,
        d_ff: int | None = None,
        d_edge: int = 16,
        edge_features: bool = True,
        *,
        edge_aggregation: bool = True,
        decoder_edge_bias: bool = True,
    ) -> None:
        super().__init__()
        self.n_obj = check_int("n_obj", n_obj, low=1)
        self.d_model = check_int("d_model", d_model, low=1)
        self.n_heads = check_int("n_heads", n_heads, low=1)
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        n_layers = check_int("n_layers", n_layers, low=1)
        d_ff = 4 * d_model if d_ff is None else check_int("d_ff", d_ff, low=1)
        self.edge_features = bool(edge_features)
        self.edge_aggregation = bool(edge_aggregation) and self.edge_features
        self.decoder_edge_bias = bool(decoder_edge_bias) and self.edge_features
        self.d_edge = check_int("d_edge", d_edge, low=1) if self.edge_features else 0
        de = self.d_edge or None
        self.node_embed = nn.Linear(2 * n_obj, d_model)
        self.pref_embed = nn.Linear(n_obj, d_model)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, de, self.edge_aggregation) for _ in range(n_layers)
        )
        # decoder
        self.ctx_graph = nn.Linear(d_model, d_model, bias=False)
        self.ctx_first = nn.Linear(d_model, d_model, bias=False)
        self.ctx_current = nn.Linear(d_model, d_model, bias=False)
        self.ctx_pref = nn.Linear(n_obj, d_model)
        self.dec_kv = nn.Linear(d_model, 2 * d_model, bias=False)
        self.dec_out = nn.Linear(d_model, d_model)
        if self.edge_features:
            self.edge_in = nn.Sequential(
                nn.Linear(n_obj + 1, self.d_edge), nn.ReLU(), nn.Linear(self.d_edge, self.d_edge)
            )
            self.edge_film = nn.Linear(n_obj, 2 * self.d_edge)
        self.dec_edge_bias = (
            nn.Linear(self.d_edge, 1) if self.edge_features and self.decoder_edge_bias else None
        )

    def edge_embedding(self, coords: torch.Tensor, prefs: torch.Tensor) -> torch.Tensor:
        """Preference-modulated edge features ``(B, n, n, d_edge)`` (FiLM of the edge MLP)."""
        dist = distance_matrices(coords).permute(0, 2, 3, 1)  # (B, n, n, M)
        ws = (dist * prefs[:, None, None, :]).sum(-1, keepdim=True)
        e = self.edge_in(torch.cat([dist, ws], dim=-1))
        gamma, beta = self.edge_film(prefs).chunk(2, dim=-1)
        return (1 + gamma)[:, None, None, :] * e + beta[:, None, None, :]

    def encode(self, coords: torch.Tensor, prefs: torch.Tensor) -> dict[str, torch.Tensor]:
        """Encode a batch: node embeddings, decoder keys and the decoder's edge bias.

        Args:
            coords: ``(B, n, 2M)`` float.
            prefs: ``(B, M)`` float, one preference per instance.

        Returns:
            A dict with ``h`` ``(B, n, d)``, ``graph`` ``(B, d)``, ``k``/``v``
            ``(B, H, n, d/H)``, ``pref_ctx`` ``(B, d)`` and ``edge_bias`` ``(B, n, n)``
            (None for the node-only network).
        """
        h = self.node_embed(coords) + self.pref_embed(prefs).unsqueeze(1)
        e = self.edge_embedding(coords, prefs) if self.edge_features else None
        for layer in self.layers:
            h, e = layer(h, e)
        b, n, d = h.shape
        hd = d // self.n_heads
        k, v = self.dec_kv(h).view(b, n, 2, self.n_heads, hd).permute(2, 0, 3, 1, 4)
        return {
            "h": h,
            "graph": self.ctx_graph(h.mean(1)),
            "first": self.ctx_first(h),
            "current": self.ctx_current(h),
            "k": k,
            "v": v,
            "pref_ctx": self.ctx_pref(prefs),
            "edge_bias": (
                self.dec_edge_bias(e).squeeze(-1)
                if e is not None and self.dec_edge_bias is not None
                else None
            ),
        }

    def logits(
        self,
        enc: dict[str, torch.Tensor],
        first: torch.Tensor,
        current: torch.Tensor,
        mask: torch.Tensor,
    ) -> torch.Tensor:
        """Masked next-node logits ``(B, P, n)`` for ``P`` rollouts per instance.

        Args:
            enc: Output of :meth:`encode`.
            first: ``(B, P)`` long, start nodes.
            current: ``(B, P)`` long, current nodes.
            mask: ``(B, P, n)`` bool, True where allowed.
        """
        h = enc["h"]
        b, n, d = h.shape
        p = first.shape[1]
        idx_f = first.unsqueeze(-1).expand(b, p, d)
        idx_c = current.unsqueeze(-1).expand(b, p, d)
        q = (
            enc["graph"].unsqueeze(1)
            + enc["first"].gather(1, idx_f)
            + enc["current"].gather(1, idx_c)
            + enc["pref_ctx"].unsqueeze(1)
        )
        hd = d // self.n_heads
        q = q.view(b, p, self.n_heads, hd).transpose(1, 2)  # (B, H, P, hd)
        att_mask = torch.zeros(b, 1, p, n, dtype=h.dtype, device=h.device)
        att_mask = att_mask.masked_fill(~mask.unsqueeze(1), float("-inf"))
        g = F.scaled_dot_product_attention(q, enc["k"], enc["v"], attn_mask=att_mask)
        g = self.dec_out(g.transpose(1, 2).reshape(b, p, d))
        u = torch.einsum("bpd,bnd->bpn", g, h) / math.sqrt(d)
        if enc["edge_bias"] is not None:
            u = u + enc["edge_bias"].gather(1, current.unsqueeze(-1).expand(b, p, n))
        return (CLIP * torch.tanh(u)).masked_fill(~mask, float("-inf"))

    def zero_edge_bias_(self) -> PMSAModel:
        """Zero every edge-to-score map (encoder head biases and the decoder's).

        The model then computes exactly what the node-only network with the same
        node weights computes (tested); useful as an ablation and for tests.
        """
        with torch.no_grad():
            for layer in self.layers:
                if layer.edge_bias is not None:
                    layer.edge_bias.weight.zero_()
                    layer.edge_bias.bias.zero_()
            if self.dec_edge_bias is not None:
                self.dec_edge_bias.weight.zero_()
                self.dec_edge_bias.bias.zero_()
        return self


class NodeOnlyModel(PMSAModel):
    """The same network as :class:`PMSAModel` without edge features (node-centric, PMOCO-like).

    Its parameters carry the same names as the node part of :class:`PMSAModel`, so
    ``pmsa.load_state_dict(node_only.state_dict(), strict=False)`` transfers them.
    """

    def __init__(
        self,
        n_obj: int = 2,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 3,
        d_ff: int | None = None,
    ) -> None:
        super().__init__(n_obj, d_model, n_heads, n_layers, d_ff, edge_features=False)
