"""The compression operators, from :mod:`icml26_core.decentralized.compression`.

Each has ``delta(d)`` (the contraction ``E||C(v) - v||^2 <= (1 - delta)||v||^2``),
``bits(d, dtype)`` (bits of one message) and ``compress(x, generator)``:

- :class:`TopK` (``ratio`` or ``k``): the ``k`` largest entries; delta ``k/d``.
- :class:`RandomK` (``unbiased=True`` rescales by ``d/k``): ``k`` random entries.
- :class:`QSGD` (``bits``): stochastic ``b``-bit quantization, unbiased.
- :class:`ScaledSign`: ``(||x||_1/d) sign(x)``, one bit per entry.
- :class:`Identity`: no compression.

:func:`make_compressor` builds one from a short name (``"top5%"``, ``"qsgd4"``, ...).
"""

from __future__ import annotations

from icml26_core.decentralized import QSGD, Compressor, Identity, RandomK, ScaledSign, TopK

__all__ = ["QSGD", "Compressor", "Identity", "RandomK", "ScaledSign", "TopK", "make_compressor"]


def make_compressor(name: str) -> Compressor:
    """A compressor from a short name.

    Args:
        name: ``"identity"``, ``"sign"``, ``"qsgdB"`` (B bits, e.g. ``"qsgd4"``),
            ``"topP%"`` or ``"randP%"`` (P percent of the entries kept, e.g. ``"top5%"``;
            ``"randP%"`` is the unbiased, rescaled random-k).

    Returns:
        The operator.

    Raises:
        ValueError: If the name is not one of these forms.

    Example:
        >>> make_compressor("top5%"), make_compressor("qsgd4")
        (TopK(0.05), QSGD(bits=4, unbiased=True))
    """
    key = str(name).strip().lower()
    if key == "identity":
        return Identity()
    if key == "sign":
        return ScaledSign()
    try:
        if key.startswith("qsgd"):
            return QSGD(int(key[4:]))
        if key.endswith("%") and key.startswith(("top", "rand")):
            ratio = float(key[3 if key.startswith("top") else 4 : -1]) / 100.0
            return TopK(ratio) if key.startswith("top") else RandomK(ratio, unbiased=True)
    except ValueError as err:
        raise ValueError(f"compressor name {name!r}: {err}") from None
    raise ValueError(
        f"compressor name {name!r} is not one of 'identity', 'sign', 'qsgdB', 'topP%', 'randP%'"
    )
