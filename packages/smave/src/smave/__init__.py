"""SMAVE: fast sufficient dimension reduction on the Stiefel manifold, with baselines.

Public API: the scikit-learn transformers :class:`SMAVE`, :class:`OPG`, :class:`MAVE`
and :class:`RMAVE`; the metric :func:`subspace_distance`; the dimension selector
:func:`select_n_components`; the criterion and its geometry in :mod:`smave.criterion`;
:class:`TiedNeighborsWarning`, raised when the projected neighbourhoods are tied.
"""

from importlib.metadata import PackageNotFoundError, version

from smave.baselines import MAVE, OPG, RMAVE
from smave.metrics import projection_matrix, subspace_distance
from smave.selection import DimensionSelection, select_n_components
from smave.smave import SMAVE, TiedNeighborsWarning

try:
    __version__ = version("smave")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "MAVE",
    "OPG",
    "RMAVE",
    "SMAVE",
    "DimensionSelection",
    "TiedNeighborsWarning",
    "__version__",
    "projection_matrix",
    "select_n_components",
    "subspace_distance",
]
