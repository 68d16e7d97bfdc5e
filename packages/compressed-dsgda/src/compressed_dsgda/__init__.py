"""Decentralized stochastic gradient descent ascent with momentum and compressed, error-fed gossip.

- :class:`CompressedDSGDA`: the optimizer (momentum, gradient tracking, CHOCO-style
  public copies of the variables and of the trackers), on a simulated network or on
  ``torch.distributed`` (``torchrun``) with one code path.
- :mod:`~compressed_dsgda.compressors`: top-k, random-k, QSGD, scaled sign, identity
  (from the core), each with its contraction ``delta`` and its bits per message.
- :class:`AUCMarginMinMax` and :class:`DRORegression`: min-max losses ``f(x, y)``.
"""

from importlib.metadata import PackageNotFoundError, version

from compressed_dsgda.compressors import (
    QSGD,
    Compressor,
    Identity,
    RandomK,
    ScaledSign,
    TopK,
    make_compressor,
)
from compressed_dsgda.losses import AUCMarginMinMax, DRORegression, auc_margin_objective, roc_auc
from compressed_dsgda.optim import CompressedDSGDA, default_gamma

try:
    __version__ = version("compressed-dsgda")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "QSGD",
    "AUCMarginMinMax",
    "CompressedDSGDA",
    "Compressor",
    "DRORegression",
    "Identity",
    "RandomK",
    "ScaledSign",
    "TopK",
    "__version__",
    "auc_margin_objective",
    "default_gamma",
    "make_compressor",
    "roc_auc",
]
