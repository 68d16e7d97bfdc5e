"""hj-prox: operator splitting with Hamilton-Jacobi Monte Carlo proximal operators.

- :func:`hj_prox`, :func:`moreau_envelope`, :class:`HJProx`, :class:`Schedule`: the
  derivative-free Monte Carlo prox (numpy or torch, batched, log-sum-exp stable);
- :func:`prox_l1`, :func:`prox_l2`, :func:`prox_group_l2`, :func:`prox_box`,
  :func:`prox_nonneg`, :class:`prox_quadratic`: exact proxes in the same ``prox(x, t)`` form;
- :func:`proximal_point`, :func:`proximal_gradient` (+ FISTA), :func:`douglas_rachford`,
  :func:`davis_yin`, :func:`pdhg`: splitting solvers that take either kind of prox and
  return a :class:`SplitResult`.
"""

from importlib.metadata import PackageNotFoundError, version

from hj_prox.hj import HJProx, Schedule, hj_prox, moreau_envelope
from hj_prox.prox import (
    prox_box,
    prox_group_l2,
    prox_l1,
    prox_l2,
    prox_nonneg,
    prox_quadratic,
)
from hj_prox.splitting import (
    SplitResult,
    davis_yin,
    douglas_rachford,
    pdhg,
    proximal_gradient,
    proximal_point,
)

try:
    __version__ = version("hj-prox")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "HJProx",
    "Schedule",
    "SplitResult",
    "__version__",
    "davis_yin",
    "douglas_rachford",
    "hj_prox",
    "moreau_envelope",
    "pdhg",
    "prox_box",
    "prox_group_l2",
    "prox_l1",
    "prox_l2",
    "prox_nonneg",
    "prox_quadratic",
    "proximal_gradient",
    "proximal_point",
]
