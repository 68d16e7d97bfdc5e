"""Compression operators for gossip: top-k, random-k, QSGD, scaled sign, identity.

Each operator maps one node's tensor ``x`` (any shape, ``d = x.numel()`` entries, a
floating dtype) to a :class:`Message`: the small tensors that go on the wire
(``message.parts``), their size in bits (``message.bits``) and ``message.decode()``,
the dense tensor every receiver reconstructs. Both gossip backends
(:class:`~icml26_core.decentralized.SimulatedNetwork` and
:class:`~icml26_core.decentralized.GossipGroup`) send and decode the same messages,
so they give the same numbers.

Each operator reports its **contraction factor** ``delta(d)`` in ``(0, 1]``:

    E ||C(x) - x||^2 <= (1 - delta) ||x||^2     for every x in R^d,

the quantity in the step-size conditions of error-feedback methods (CHOCO-SGD,
Koloskova et al. 2019), and ``bits(d, dtype)``, the size of one message in the usual
encoding (values in the tensor's float format, indices in ``ceil(log2 d)`` bits,
signs and levels in their bits):

- ``Identity()``: ``x`` itself; ``d f`` bits; delta 1.
- ``TopK(ratio)`` or ``TopK(k=k)``: the ``k`` entries of largest magnitude, the
  others 0; ``k (f + ceil(log2 d))`` bits; delta ``k / d``; biased.
- ``RandomK(ratio)``: ``k`` entries chosen uniformly; same bits; delta ``k / d``;
  biased. With ``unbiased=True`` the kept entries are multiplied by ``d / k``
  (unbiased, ``omega = d/k - 1``; delta ``k / d`` (*)).
- ``QSGD(bits=b)``: ``||x|| sign(x_i) xi_i / s`` with ``s = 2^(b-1) - 1`` stochastic
  levels (Alistarh et al. 2017); ``f + d b`` bits; unbiased with ``omega = min(d /
  s^2, sqrt(d) / s)``, delta ``1 / (1 + omega)`` (*). With ``unbiased=False`` the
  result is divided by ``1 + omega``: a contraction with that delta.
- ``ScaledSign()``: ``(||x||_1 / d) sign(x)`` (Karimireddy et al. 2019); ``f + d``
  bits; delta ``1 / d`` in the worst case, ``||x||_1^2 / (d ||x||_2^2)`` for a given
  ``x`` (``ScaledSign.delta_of(x)``); biased.

``f`` is the float width of ``x`` (32 for float32). (*) An unbiased operator with
``E||C(x) - x||^2 <= omega ||x||^2`` is not itself a contraction; ``delta`` is then
that of its rescaled form ``C / (1 + omega)``, which is how error-feedback methods
use it (``omega(d)`` gives ``omega``; ``None`` for the biased operators).

Randomized operators draw from the ``torch.Generator`` passed to ``compress`` (on the
CPU, so CPU and CUDA runs draw the same numbers); each node of a network has its own.
``bits`` counts the encoding above; the ``torch.distributed`` transport actually
sends int64 indices and int8 levels (``message.nbytes``), which the count leaves out,
as the compression literature does. NaN entries are not checked here (a hot path):
validate gradients before compressing them.

Example:
    >>> import torch
    >>> x = torch.tensor([0.1, -3.0, 0.5, 2.0])
    >>> msg = TopK(k=2).compress(x)
    >>> msg.decode(), msg.bits, TopK(k=2).delta(4)
    (tensor([ 0., -3.,  0.,  2.]), 68, 0.5)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from icml26_core._lazy import require
from icml26_core.validation import check_float, check_int

torch = require("torch", "decentralized")

__all__ = ["QSGD", "Compressor", "Identity", "Message", "RandomK", "ScaledSign", "TopK"]


def _float_bits(dtype: Any) -> int:
    return int(torch.finfo(dtype).bits)


def _index_bits(d: int) -> int:
    return max(1, math.ceil(math.log2(d))) if d > 1 else 1


def _check_tensor(x: Any) -> Any:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"x must have a floating dtype, got {x.dtype}")
    if x.numel() == 0:
        raise ValueError("x must have at least one entry")
    return x.detach()


@dataclass(frozen=True, eq=False)
class Message:
    """One node's compressed tensor: what goes on the wire and how to decode it.

    Attributes:
        compressor: The operator that made it (and decodes it).
        parts: The wire tensors (1-D, contiguous; e.g. values and int64 indices).
        shape: Shape of the original tensor.
        dtype: Floating dtype of the original tensor.
        bits: Size of the message in the operator's encoding (see the module docs).
    """

    compressor: Compressor
    parts: tuple[Any, ...]
    shape: tuple[int, ...]
    dtype: Any
    bits: int

    def decode(self) -> Any:
        """The dense tensor (shape ``shape``, dtype ``dtype``) a receiver reconstructs."""
        return self.compressor.decode(self.parts, self.shape, self.dtype)

    @property
    def numel(self) -> int:
        """Entries of the original tensor."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes the torch.distributed transport sends (the parts as stored)."""
        return sum(p.numel() * p.element_size() for p in self.parts)

    def to_bytes(self) -> Any:
        """The parts concatenated into one uint8 tensor (one send per neighbour)."""
        flat = [p.contiguous().reshape(-1).view(torch.uint8) for p in self.parts]
        return torch.cat(flat) if len(flat) > 1 else flat[0].clone()

    def from_bytes(self, buffer: Any) -> Message:
        """A message of the same layout as this one, read from ``buffer`` (uint8).

        Every node of a network compresses tensors of the same shape and dtype with
        the same operator, so a receiver allocates its buffer like its own message.
        """
        parts, offset = [], 0
        for p in self.parts:
            size = p.numel() * p.element_size()
            chunk = buffer[offset : offset + size].clone()  # aligned storage for the view
            parts.append(chunk.view(p.dtype).reshape(p.shape))
            offset += size
        if offset != buffer.numel():
            raise ValueError(f"buffer has {buffer.numel()} bytes, the layout needs {offset}")
        return Message(self.compressor, tuple(parts), self.shape, self.dtype, self.bits)


class Compressor:
    """Base class of the operators; subclasses define ``_encode`` and ``decode``.

    Attributes:
        unbiased: Whether ``E[C(x)] = x``.
    """

    unbiased: bool = False

    def compress(self, x: Any, generator: Any = None) -> Message:
        """Compress one node's tensor.

        Args:
            x: Floating tensor of any shape (not modified).
            generator: CPU ``torch.Generator`` for the randomized operators (default:
                torch's global one).

        Returns:
            A :class:`Message`.

        Raises:
            TypeError: If ``x`` is not a floating torch tensor.
            ValueError: If ``x`` is empty, or ``k`` exceeds its number of entries.
        """
        x = _check_tensor(x)
        parts = self._encode(x.reshape(-1), generator)
        return Message(self, tuple(parts), tuple(x.shape), x.dtype, self.bits(x.numel(), x.dtype))

    def __call__(self, x: Any, generator: Any = None) -> Any:
        """``compress(x).decode()``: the dense compressed tensor."""
        return self.compress(x, generator).decode()

    def _encode(self, flat: Any, generator: Any) -> list[Any]:  # pragma: no cover
        raise NotImplementedError

    def decode(self, parts: tuple[Any, ...], shape: tuple[int, ...], dtype: Any) -> Any:
        """Dense tensor from the wire parts."""
        raise NotImplementedError  # pragma: no cover

    def bits(self, numel: int, dtype: Any = None) -> int:
        """Bits of one message of a tensor with ``numel`` entries (float32 by default)."""
        raise NotImplementedError  # pragma: no cover

    def delta(self, numel: int) -> float:
        """Contraction factor for ``numel`` entries (see the module docs)."""
        raise NotImplementedError  # pragma: no cover

    def omega(self, numel: int) -> float | None:
        """Variance factor ``omega`` of an unbiased operator; None when biased."""
        return None


class Identity(Compressor):
    """No compression: the full tensor (delta = 1)."""

    unbiased = True

    def _encode(self, flat: Any, generator: Any) -> list[Any]:
        return [flat.clone()]

    def decode(self, parts: tuple[Any, ...], shape: tuple[int, ...], dtype: Any) -> Any:
        """The tensor itself."""
        return parts[0].reshape(shape).to(dtype)

    def bits(self, numel: int, dtype: Any = None) -> int:
        """``numel`` floats."""
        return check_int("numel", numel, low=1) * _float_bits(dtype or torch.float32)

    def delta(self, numel: int) -> float:
        """1."""
        check_int("numel", numel, low=1)
        return 1.0

    def omega(self, numel: int) -> float | None:
        """0."""
        return 0.0

    def __repr__(self) -> str:
        return "Identity()"


class _Sparsifier(Compressor):
    def __init__(self, ratio: float | None = None, *, k: int | None = None) -> None:
        if (ratio is None) == (k is None):
            raise ValueError("give exactly one of ratio (a fraction in (0, 1]) and k")
        self.ratio = (
            None
            if ratio is None
            else check_float("ratio", ratio, low=0.0, high=1.0, low_inclusive=False)
        )
        self.k = None if k is None else check_int("k", k, low=1)

    def k_for(self, numel: int) -> int:
        """Number of entries kept of a tensor with ``numel`` entries."""
        numel = check_int("numel", numel, low=1)
        if self.k is not None:
            if self.k > numel:
                raise ValueError(f"k={self.k} exceeds the tensor's {numel} entries")
            return self.k
        assert self.ratio is not None  # set whenever k is None (checked in __post_init__)
        return max(1, math.ceil(self.ratio * numel - 1e-9))

    def decode(self, parts: tuple[Any, ...], shape: tuple[int, ...], dtype: Any) -> Any:
        """Scatter the values at their indices into zeros."""
        values, index = parts
        out = torch.zeros(math.prod(shape), dtype=dtype, device=values.device)
        out[index] = values.to(dtype)
        return out.reshape(shape)

    def bits(self, numel: int, dtype: Any = None) -> int:
        """``k`` values and ``k`` indices of ``ceil(log2 numel)`` bits."""
        k = self.k_for(numel)
        return k * (_float_bits(dtype or torch.float32) + _index_bits(numel))

    def delta(self, numel: int) -> float:
        """``k / numel``."""
        return self.k_for(numel) / numel

    def _arg(self) -> str:
        return f"{self.ratio!r}" if self.ratio is not None else f"k={self.k}"


class TopK(_Sparsifier):
    """Keep the ``k`` entries of largest magnitude (biased; delta = k / d).

    Args:
        ratio: Fraction of entries kept, in (0, 1]; ``k = ceil(ratio * d)`` (at least 1).
        k: Or the number of entries kept, >= 1 (at most ``d``).

    Raises:
        ValueError: If neither or both are given, or one is out of range (``k = 0``).
    """

    def _encode(self, flat: Any, generator: Any) -> list[Any]:
        k = self.k_for(flat.numel())
        index = torch.topk(flat.abs(), k, sorted=False).indices.sort().values
        return [flat[index].clone(), index]

    def __repr__(self) -> str:
        return f"TopK({self._arg()})"


class RandomK(_Sparsifier):
    """Keep ``k`` entries chosen uniformly at random (delta = k / d).

    Args:
        ratio: Fraction of entries kept, in (0, 1].
        k: Or the number of entries kept, >= 1.
        unbiased: Multiply the kept entries by ``d / k`` so that ``E[C(x)] = x``
            (variance ``omega = d/k - 1``); ``delta`` then refers to the rescaled form.

    Raises:
        ValueError: If neither or both of ``ratio`` and ``k`` are given, or out of range.
    """

    def __init__(
        self, ratio: float | None = None, *, k: int | None = None, unbiased: bool = False
    ) -> None:
        super().__init__(ratio, k=k)
        self.unbiased = bool(unbiased)

    def _encode(self, flat: Any, generator: Any) -> list[Any]:
        d = flat.numel()
        k = self.k_for(d)
        index = torch.randperm(d, generator=generator)[:k].sort().values.to(flat.device)
        values = flat[index].clone()
        if self.unbiased:
            values = values * (d / k)
        return [values, index]

    def omega(self, numel: int) -> float | None:
        """``d / k - 1`` when unbiased."""
        return numel / self.k_for(numel) - 1.0 if self.unbiased else None

    def __repr__(self) -> str:
        return f"RandomK({self._arg()}, unbiased={self.unbiased})"


class QSGD(Compressor):
    """QSGD stochastic quantization with ``b`` bits per entry (Alistarh et al. 2017).

    Each entry becomes ``||x||_2 sign(x_i) l_i / s`` with ``s = 2^(b-1) - 1`` levels,
    ``l_i`` the level below ``s |x_i| / ||x||`` or the one above, drawn so that the
    result is unbiased. One sign bit and ``b - 1`` level bits per entry, plus the norm.

    Args:
        bits: Bits per entry, 2 to 8 (4 gives 7 levels).
        unbiased: Keep it unbiased (variance ``omega = min(d / s^2, sqrt(d) / s)``);
            False divides by ``1 + omega``, a contraction with ``delta = 1 / (1 + omega)``.

    Raises:
        ValueError: If ``bits`` is outside 2..8.
    """

    def __init__(self, bits: int = 4, *, unbiased: bool = True) -> None:
        self.n_bits = check_int("bits", bits, low=2, high=8)
        self.levels = 2 ** (self.n_bits - 1) - 1
        self.unbiased = bool(unbiased)

    def _omega(self, numel: int) -> float:
        s = self.levels
        return min(numel / s**2, math.sqrt(numel) / s)

    def _encode(self, flat: Any, generator: Any) -> list[Any]:
        norm = torch.linalg.vector_norm(flat).reshape(1)
        u = torch.rand(flat.numel(), generator=generator, dtype=torch.float64).to(flat.device)
        if float(norm) == 0.0:
            return [norm.clone(), torch.zeros(flat.numel(), dtype=torch.int8, device=flat.device)]
        scaled = flat.abs().double() / norm.double() * self.levels
        low = torch.floor(scaled)
        level = (low + (u < (scaled - low)).double()).clamp_(max=self.levels)
        signed = (torch.sign(flat).double() * level).to(torch.int8)
        return [norm.clone(), signed]

    def decode(self, parts: tuple[Any, ...], shape: tuple[int, ...], dtype: Any) -> Any:
        """``norm * level / s`` (divided by ``1 + omega`` when biased)."""
        norm, signed = parts
        scale = norm.to(dtype) / self.levels
        if not self.unbiased:
            scale = scale / (1.0 + self._omega(signed.numel()))
        return (signed.to(dtype) * scale).reshape(shape)

    def bits(self, numel: int, dtype: Any = None) -> int:
        """One float (the norm) plus ``b`` bits per entry."""
        numel = check_int("numel", numel, low=1)
        return _float_bits(dtype or torch.float32) + numel * self.n_bits

    def delta(self, numel: int) -> float:
        """``1 / (1 + omega)``."""
        return 1.0 / (1.0 + self._omega(check_int("numel", numel, low=1)))

    def omega(self, numel: int) -> float | None:
        """``min(d / s^2, sqrt(d) / s)`` when unbiased."""
        return self._omega(check_int("numel", numel, low=1)) if self.unbiased else None

    def __repr__(self) -> str:
        return f"QSGD(bits={self.n_bits}, unbiased={self.unbiased})"


_BIT_WEIGHTS = (128, 64, 32, 16, 8, 4, 2, 1)


class ScaledSign(Compressor):
    """Scaled sign: ``(||x||_1 / d) sign(x)``, one bit per entry (Karimireddy et al. 2019).

    Zero entries are sent as ``+``. Deterministic; ``E||C(x) - x||^2 = ||x||^2 -
    ||x||_1^2 / d`` exactly, so ``delta(x) = ||x||_1^2 / (d ||x||^2) >= 1 / d``.
    """

    def _encode(self, flat: Any, generator: Any) -> list[Any]:
        d = flat.numel()
        scale = (flat.abs().sum() / d).reshape(1)
        positive = (flat >= 0).to(torch.uint8)
        pad = (-d) % 8
        if pad:
            positive = torch.cat([positive, positive.new_zeros(pad)])
        weights = torch.tensor(_BIT_WEIGHTS, dtype=torch.uint8, device=flat.device)
        packed = (positive.reshape(-1, 8) * weights).sum(dim=1, dtype=torch.int32)
        return [scale.clone(), packed.to(torch.uint8)]

    def decode(self, parts: tuple[Any, ...], shape: tuple[int, ...], dtype: Any) -> Any:
        """Unpack the sign bits and scale them."""
        scale, packed = parts
        d = math.prod(shape)
        shifts = torch.arange(7, -1, -1, device=packed.device, dtype=torch.uint8)
        bits = ((packed[:, None] >> shifts) & 1).reshape(-1)[:d]
        return ((bits.to(dtype) * 2 - 1) * scale.to(dtype)).reshape(shape)

    def bits(self, numel: int, dtype: Any = None) -> int:
        """One float (the scale) plus one bit per entry."""
        return _float_bits(dtype or torch.float32) + check_int("numel", numel, low=1)

    def delta(self, numel: int) -> float:
        """Worst case ``1 / d`` (a vector with a single nonzero entry)."""
        return 1.0 / check_int("numel", numel, low=1)

    @staticmethod
    def delta_of(x: Any) -> float:
        """The exact ``1 - ||C(x) - x||^2 / ||x||^2 = ||x||_1^2 / (d ||x||_2^2)`` for ``x``."""
        x = _check_tensor(x).reshape(-1).double()
        sq = float((x * x).sum())
        return 1.0 if sq == 0 else float(x.abs().sum()) ** 2 / (x.numel() * sq)

    def __repr__(self) -> str:
        return "ScaledSign()"
