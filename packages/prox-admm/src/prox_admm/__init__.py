"""Proximal multi-block ADMM for block anti-upper triangular constraints.

``min sum_i f_i(x_i)`` s.t. ``sum_j A_kj x_j = b_k`` for block rows k, with ``A_kj = 0``
above the anti-diagonal. The rows keep their own multipliers and penalties; each block
update is the augmented Lagrangian in ``x_i`` plus a proximal term. Blocks may be
quadratic (closed form), have a prox (linearized or exact), or come with a solver;
nonconvex penalties (MCP, SCAD) are included. :mod:`prox_admm.theory` states our
assumption, checks it numerically and gives the parameter condition.

References:
    The paper (ICML 2026; abstract only).
"""

from importlib.metadata import PackageNotFoundError, version

from prox_admm.admm import ADMMResult, Linearized, ProximalADMM, kkt_residual
from prox_admm.blocks import (
    Block,
    Subproblem,
    box,
    l1,
    least_squares,
    mcp,
    nonneg,
    quadratic,
    scad,
    zero,
)
from prox_admm.matrix import BlockMatrix
from prox_admm.problems import (
    Problem,
    chen_example,
    consensus,
    elastic_net_box,
    mcp_nonneg_objective,
    mcp_nonneg_regression,
    qp_with_slacks,
)
from prox_admm.theory import (
    AssumptionReport,
    Certificate,
    check_assumptions,
    descent_certificate,
    iteration_spectral_radius,
    jacobi_tau,
    suggest_rho,
)

try:
    __version__ = version("prox-admm")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "ADMMResult",
    "AssumptionReport",
    "Block",
    "BlockMatrix",
    "Certificate",
    "Linearized",
    "Problem",
    "ProximalADMM",
    "Subproblem",
    "__version__",
    "box",
    "check_assumptions",
    "chen_example",
    "consensus",
    "descent_certificate",
    "elastic_net_box",
    "iteration_spectral_radius",
    "jacobi_tau",
    "kkt_residual",
    "l1",
    "least_squares",
    "mcp",
    "mcp_nonneg_objective",
    "mcp_nonneg_regression",
    "nonneg",
    "qp_with_slacks",
    "quadratic",
    "scad",
    "suggest_rho",
    "zero",
]
