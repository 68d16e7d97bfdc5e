"""POGO: fast optimization under orthogonality (Stiefel) constraints, for torch.

``POGO`` is a :class:`torch.optim.Optimizer` that keeps matrices (or batches of
matrices) with orthonormal rows or columns on the Stiefel manifold using 5 batched
matrix products per step, on top of a base rule (SGD with momentum, Adam,
VectorAdam). ``Landing`` (Ablin et al., 2024) is included as a baseline.
"""

from importlib.metadata import PackageNotFoundError, version

from pogo_optim.functional import (
    BaseRule,
    adam_direction,
    base_rule_names,
    get_base_rule,
    landing_safe_step,
    landing_update,
    pogo_update,
    register_base_rule,
    relative_gradient,
    sgd_direction,
    vadam_direction,
)
from pogo_optim.optimizers import POGO, Landing, StiefelOptimizer
from pogo_optim.stiefel import orthogonality_error, project, random_stiefel

try:
    __version__ = version("pogo-optim")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "POGO",
    "BaseRule",
    "Landing",
    "StiefelOptimizer",
    "__version__",
    "adam_direction",
    "base_rule_names",
    "get_base_rule",
    "landing_safe_step",
    "landing_update",
    "orthogonality_error",
    "pogo_update",
    "project",
    "random_stiefel",
    "register_base_rule",
    "relative_gradient",
    "sgd_direction",
    "vadam_direction",
]
