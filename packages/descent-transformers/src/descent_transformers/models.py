"""Models that expose a prediction at every layer.

- :class:`UnrolledTransformer`: a space-time transformer over patch tokens of a short
  grey-level clip, with one residual readout shared by every layer (a denoiser whose
  layers play the role of the iterations of an unrolled algorithm).
- :func:`with_layer_heads`: per-layer classification heads on the mean-pooled hidden
  states of a pretrained encoder (any model that accepts ``output_hidden_states=True``,
  e.g. a transformers ``BertModel``).

Both define ``layer_outputs(inputs) -> list`` of ``L + 1`` predictions (index 0 the
base), which :func:`descent_transformers.layer_losses` and the trainer read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
from icml26_core.validation import check_int
from torch import nn

__all__ = ["LayerHeads", "UnrolledTransformer", "with_layer_heads"]

Perturb = Callable[[int, torch.Tensor], torch.Tensor]


class UnrolledTransformer(nn.Module):
    """Space-time transformer denoiser with a shared residual readout at every layer.

    A clip ``x`` of shape ``(B, T, H, W)`` is cut into ``p x p`` patches per frame
    (``T * H/p * W/p`` tokens), embedded linearly with learned time and space position
    embeddings, and passed through ``depth`` pre-norm transformer blocks with joint
    attention over all tokens. After block ``l`` the shared readout ``r`` (LayerNorm +
    linear, zero-initialised) maps the tokens back to patches and the layer's estimate
    is ``x - r(h_l)`` (the noise is predicted). Layer 0's estimate is the input itself,
    so ``l_0`` is the loss of doing nothing.

    Args:
        dim: Token width.
        depth: Number of blocks ``L``.
        heads: Attention heads (must divide ``dim``).
        patch: Patch side ``p`` in pixels.
        frames: Clip length ``T``.
        size: Frame side ``H = W`` in pixels (a multiple of ``patch``).
        mlp_ratio: Hidden width of each block's MLP, in multiples of ``dim``.

    Raises:
        ValueError: On a non-positive size, ``heads`` not dividing ``dim`` or ``size``
            not a multiple of ``patch``; at call time, on an input ``x`` that is not a
            ``(B, frames, size, size)`` tensor.
        TypeError: On a non-integer size; at call time, on an input whose dtype is not
            the model's (float32 unless converted).

    Example:
        >>> import torch
        >>> net = UnrolledTransformer(dim=16, depth=3, heads=2, patch=8, frames=2, size=16)
        >>> outs = net.layer_outputs(torch.rand(5, 2, 16, 16))
        >>> len(outs), tuple(outs[-1].shape)
        (4, (5, 2, 16, 16))
    """

    def __init__(
        self,
        dim: int = 64,
        depth: int = 6,
        heads: int = 4,
        patch: int = 8,
        frames: int = 4,
        size: int = 32,
        mlp_ratio: int = 2,
    ) -> None:
        super().__init__()
        self.dim = check_int("dim", dim, low=1)
        self.depth = check_int("depth", depth, low=1)
        self.heads = check_int("heads", heads, low=1)
        self.patch = check_int("patch", patch, low=1)
        self.frames = check_int("frames", frames, low=1)
        self.size = check_int("size", size, low=1)
        mlp_ratio = check_int("mlp_ratio", mlp_ratio, low=1)
        if dim % heads:
            raise ValueError(f"heads must divide dim, got dim={dim}, heads={heads}")
        if size % patch:
            raise ValueError(f"size must be a multiple of patch, got size={size}, patch={patch}")
        self.grid = size // patch
        n_space = self.grid * self.grid
        self.embed = nn.Linear(patch * patch, dim)
        self.pos_time = nn.Parameter(torch.zeros(frames, 1, dim))
        self.pos_space = nn.Parameter(torch.randn(1, n_space, dim) * 0.02)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                dim,
                heads,
                dim_feedforward=mlp_ratio * dim,
                dropout=0.0,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
            for _ in range(depth)
        )
        self.readout = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, patch * patch))
        nn.init.zeros_(self.readout[1].weight)
        nn.init.zeros_(self.readout[1].bias)

    def _check_input(self, x: torch.Tensor) -> None:
        want = (self.frames, self.size, self.size)
        if not isinstance(x, torch.Tensor) or x.dim() != 4 or tuple(x.shape[1:]) != want:
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must have shape (B, {want[0]}, {want[1]}, {want[2]}), got {got}")
        dtype = self.embed.weight.dtype
        if x.dtype != dtype:
            raise TypeError(
                f"x must have the model's dtype {dtype}, got {x.dtype} (convert the clip with "
                f"x.to({dtype}), scaled to [0, 1] if it holds 8-bit pixels, or the model "
                f"with .to(x.dtype))"
            )

    def patchify(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, T, H, W)`` -> ``(B, T * N, p * p)`` tokens, time-major."""
        b, t, p, g = x.shape[0], self.frames, self.patch, self.grid
        x = x.reshape(b, t, g, p, g, p).permute(0, 1, 2, 4, 3, 5)
        return x.reshape(b, t * g * g, p * p)

    def unpatchify(self, z: torch.Tensor) -> torch.Tensor:
        """Inverse of :meth:`patchify`."""
        b, t, p, g = z.shape[0], self.frames, self.patch, self.grid
        z = z.reshape(b, t, g, g, p, p).permute(0, 1, 2, 4, 3, 5)
        return z.reshape(b, t, g * p, g * p)

    def hidden_states(self, x: torch.Tensor, perturb: Perturb | None = None) -> list[torch.Tensor]:
        """Token states ``h_0 .. h_L``, each ``(B, T * N, dim)``.

        Args:
            x: ``(B, T, H, W)`` float clip.
            perturb: Optional ``perturb(l, h) -> h`` applied after block ``l``
                (``1 .. L``), e.g. noise injected into a middle layer.

        Raises:
            ValueError, TypeError: On an ``x`` of another shape or dtype (see the class).
        """
        self._check_input(x)
        b = x.shape[0]
        pos = (self.pos_time + self.pos_space).reshape(1, -1, self.dim)
        h = self.embed(self.patchify(x)) + pos.expand(b, -1, -1)
        states = [h]
        for i, block in enumerate(self.blocks, start=1):
            h = block(h)
            if perturb is not None:
                h = perturb(i, h)
            states.append(h)
        return states

    def layer_outputs(self, x: torch.Tensor, perturb: Perturb | None = None) -> list[torch.Tensor]:
        """Estimates of the clean clip at layers ``0 .. L`` (layer 0: ``x`` itself).

        Returns:
            ``L + 1`` tensors of shape ``(B, T, H, W)``.
        """
        states = self.hidden_states(x, perturb)
        return [x] + [x - self.unpatchify(self.readout(h)) for h in states[1:]]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The last layer's estimate, ``(B, T, H, W)``."""
        return self.layer_outputs(x)[-1]


class LayerHeads(nn.Module):
    """Per-layer classification heads on a pretrained encoder (see :func:`with_layer_heads`).

    ``layer_outputs(inputs)`` calls ``encoder(**inputs, output_hidden_states=True)``, mean-
    pools each of its ``L + 1`` hidden states over the tokens that ``attention_mask``
    keeps, and applies head ``l`` to state ``l``: ``L + 1`` logits of shape ``(B, C)``.
    Index 0 is the embedding layer. ``forward`` returns the last layer's logits.

    Args:
        encoder: The encoder (its parameters are shared, not copied).
        n_layers: ``L``, its number of layers after the embeddings.
        hidden: Width of its hidden states.
        n_classes: Number of classes ``C >= 2``.

    Raises:
        TypeError, ValueError: On a non-integer or out-of-range size; at call time
            (``layer_outputs``), a TypeError if ``inputs`` is not a mapping or the encoder
            does not return ``L + 1`` hidden states.
    """

    def __init__(self, encoder: nn.Module, n_layers: int, hidden: int, n_classes: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.n_layers = check_int("n_layers", n_layers, low=1)
        self.n_classes = check_int("n_classes", n_classes, low=2)
        self.heads = nn.ModuleList(nn.Linear(hidden, n_classes) for _ in range(n_layers + 1))

    def layer_outputs(self, inputs: Mapping[str, torch.Tensor]) -> list[torch.Tensor]:
        """Logits of every layer, ``L + 1`` tensors ``(B, n_classes)``."""
        if not isinstance(inputs, Mapping):
            raise TypeError(
                "inputs must be a mapping of the encoder's keyword arguments "
                f"(input_ids, attention_mask, ...), got {type(inputs).__name__}"
            )
        out = self.encoder(**inputs, output_hidden_states=True)
        hidden = getattr(out, "hidden_states", None)
        if hidden is None or len(hidden) != self.n_layers + 1:
            raise TypeError(
                "the encoder must return hidden_states when called with "
                f"output_hidden_states=True ({self.n_layers + 1} of them), got "
                f"{None if hidden is None else len(hidden)}"
            )
        mask = inputs.get("attention_mask")
        logits = []
        for head, h in zip(self.heads, hidden, strict=True):
            if mask is None:
                pooled = h.mean(dim=1)
            else:
                m = mask.to(h.dtype).unsqueeze(-1)
                pooled = (h * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)
            logits.append(head(pooled))
        return logits

    def forward(self, inputs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The last layer's logits, ``(B, n_classes)``."""
        return self.layer_outputs(inputs)[-1]


def with_layer_heads(hf_model: nn.Module, n_classes: int) -> LayerHeads:
    """Wrap a pretrained encoder with one linear head per layer (embeddings included).

    Args:
        hf_model: An encoder whose ``config`` has ``num_hidden_layers`` and
            ``hidden_size`` and whose forward accepts ``output_hidden_states=True``
            (e.g. ``transformers.AutoModel.from_pretrained(...)`` of a BERT).
        n_classes: Number of classes ``C >= 2``.

    Returns:
        A :class:`LayerHeads` module (the encoder's parameters are shared, not copied).

    Raises:
        TypeError: If ``hf_model`` has no ``config`` with those two fields.
    """
    config = getattr(hf_model, "config", None)
    layers = getattr(config, "num_hidden_layers", None)
    hidden = getattr(config, "hidden_size", None)
    if layers is None or hidden is None:
        raise TypeError(
            "hf_model must have a config with num_hidden_layers and hidden_size "
            "(a transformers encoder that accepts output_hidden_states=True)"
        )
    return LayerHeads(hf_model, int(layers), int(hidden), n_classes)
