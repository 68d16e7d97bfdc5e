"""SAG, SAGA and IAG under one convergence analysis, as practical solvers.

Solvers for finite sums with per-sample gradient oracles and a compiled fast path for
linear models, the sampling schemes the analysis covers, the unified convergence bound as
a function, scikit-learn estimators and a batched torch solver.

References:
    Zhu, Heath & Mitra (ICML 2026), A short and unified convergence analysis of the SAG,
    SAGA and IAG algorithms (abstract only).
"""

from importlib.metadata import PackageNotFoundError, version

from sag_saga_iag.baselines import gradient_descent, reference_optimum, sgd
from sag_saga_iag.bounds import (
    MaxLemmaBound,
    UnifiedBound,
    classical_rate,
    delay_bound,
    error_constant,
    max_lemma_iag_bound,
    theory_step_size,
    unified_bound,
)
from sag_saga_iag.estimators import (
    IAGLogisticRegression,
    IAGRidge,
    SAGALogisticRegression,
    SAGARidge,
    SAGLogisticRegression,
    SAGRidge,
)
from sag_saga_iag.problems import FiniteSum, LinearModelProblem, Smoothness
from sag_saga_iag.sampling import (
    CyclicSampler,
    MarkovSampler,
    ReshuffleSampler,
    Sampler,
    UniformSampler,
    make_sampler,
)
from sag_saga_iag.solvers import SolverResult, iag, resolve_step_size, sag, saga, solve

try:
    __version__ = version("sag-saga-iag")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "CyclicSampler",
    "FiniteSum",
    "IAGLogisticRegression",
    "IAGRidge",
    "LinearModelProblem",
    "MarkovSampler",
    "MaxLemmaBound",
    "ReshuffleSampler",
    "SAGALogisticRegression",
    "SAGARidge",
    "SAGLogisticRegression",
    "SAGRidge",
    "Sampler",
    "Smoothness",
    "SolverResult",
    "UnifiedBound",
    "UniformSampler",
    "__version__",
    "classical_rate",
    "delay_bound",
    "error_constant",
    "gradient_descent",
    "iag",
    "make_sampler",
    "max_lemma_iag_bound",
    "reference_optimum",
    "resolve_step_size",
    "sag",
    "saga",
    "sgd",
    "solve",
    "theory_step_size",
    "unified_bound",
]
