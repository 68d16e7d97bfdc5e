"""eNMF: exterior nonnegative matrix factorization, a scikit-learn drop-in for NMF.

Public API:
    ENMF: the exterior method; algorithm="paper" (SVD, L1 rotation by ADMM, gradual path
        to the orthant, plain HALS) or "extrapolated" (our extrapolated exterior HALS).
    HALS: hierarchical alternating least squares, plain, accelerated or extrapolated.
    factors_equivalent: are two factorizations equal up to permutation and scaling?
    rotate_to_orthant: the rotation of unconstrained factors towards the orthant.
    kkt_residuals: how far a factorization is from the KKT conditions of NMF.
"""

from importlib.metadata import PackageNotFoundError, version

from enmf.equivalence import Equivalence, factors_equivalent
from enmf.estimators import ENMF, HALS
from enmf.kkt import KKTResiduals, kkt_residuals
from enmf.rotation import Rotation, rotate_to_orthant

try:
    __version__ = version("enmf")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "ENMF",
    "HALS",
    "Equivalence",
    "KKTResiduals",
    "Rotation",
    "__version__",
    "factors_equivalent",
    "kkt_residuals",
    "rotate_to_orthant",
]
