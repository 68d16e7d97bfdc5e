"""Cost-aware stopping for Bayesian optimization, on BoTorch.

The Pandora's Box Gittins index (PBGI) and log expected improvement per cost
(LogEIPC) as BoTorch acquisition functions, the cost-aware stopping rule they
share (stop when no point's expected improvement justifies its cost), the
usual baseline stopping rules, and a loop that records the cost-adjusted
simple regret.

References:
    "Cost-aware stopping for Bayesian optimization" (ICML 2026; abstract only).
"""

from importlib.metadata import PackageNotFoundError, version

from bo_stopping.acquisition import (
    LogExpectedImprovementPerCost,
    PandoraBoxGittinsIndex,
    construct_inputs_logeipc,
    construct_inputs_pbgi,
)
from bo_stopping.costs import (
    CostFunction,
    FixedCost,
    KnownCost,
    ModelCost,
    ModelledCost,
    as_cost,
    checked_log_cost,
)
from bo_stopping.index import (
    gittins_index,
    log_expected_improvement_at,
    log_h,
    solve_scaled_index,
)
from bo_stopping.loop import ACQUISITIONS, BOResult, GPFittingWarning, fit_gp, run_bo
from bo_stopping.stopping import (
    BOState,
    CostAwareStopping,
    ExpectedImprovementThreshold,
    FixedBudget,
    ProbabilityOfImprovementThreshold,
    RegretGapStopping,
    StoppingRule,
)

try:
    __version__ = version("bo-stopping")
except PackageNotFoundError:  # pragma: no cover - source checkout without install
    __version__ = "0.0.0"

PBGI = PandoraBoxGittinsIndex
LogEIPC = LogExpectedImprovementPerCost

__all__ = [
    "ACQUISITIONS",
    "PBGI",
    "BOResult",
    "BOState",
    "CostAwareStopping",
    "CostFunction",
    "ExpectedImprovementThreshold",
    "FixedBudget",
    "FixedCost",
    "GPFittingWarning",
    "KnownCost",
    "LogEIPC",
    "LogExpectedImprovementPerCost",
    "ModelCost",
    "ModelledCost",
    "PandoraBoxGittinsIndex",
    "ProbabilityOfImprovementThreshold",
    "RegretGapStopping",
    "StoppingRule",
    "__version__",
    "as_cost",
    "checked_log_cost",
    "construct_inputs_logeipc",
    "construct_inputs_pbgi",
    "fit_gp",
    "gittins_index",
    "log_expected_improvement_at",
    "log_h",
    "run_bo",
    "solve_scaled_index",
]
