"""FOAM: Shampoo with adaptive damping and eigendecomposition frequency from a staleness error.

- :class:`Shampoo`: standard Shampoo (Kronecker factors, ``eigh`` inverse 4th roots,
  momentum, Adam grafting, decoupled weight decay), fixed frequency and damping.
- :class:`FOAM`: the same optimizer with the eigendecomposition frequency and the
  damping driven by a staleness error (our reading of the ICML 2026 abstract).
- :func:`staleness_error`: the per-factor error proxies of an optimizer.
- :func:`matrix_inverse_root`: ``(A + damping * lambda_max I)^(-1/p)``.
"""

from importlib.metadata import PackageNotFoundError, version

from foam_shampoo.optim import FOAM, Shampoo, matrix_inverse_root, staleness_error

try:
    __version__ = version("foam-shampoo")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["FOAM", "Shampoo", "__version__", "matrix_inverse_root", "staleness_error"]
