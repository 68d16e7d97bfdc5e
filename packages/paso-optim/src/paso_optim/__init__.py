"""PASO: step-parallel training by solving the triangular system of optimizer steps.

- :class:`PASO`: train an ``nn.Module`` for ``T`` steps in windows of ``P`` gradients
  per round (``backend="vmap"`` or ``"serial"``);
- :func:`solve_triangular`: the generic window solver on flat tensors;
- :mod:`paso_optim.functional`: pure SGD / momentum / Adam / AdamW updates that match
  ``torch.optim``.
"""

from importlib.metadata import PackageNotFoundError, version

from paso_optim.functional import FunctionalOptimizer, adam, adamw, make_optimizer, sgd
from paso_optim.paso import PASO, PasoResult
from paso_optim.solver import SolveResult, sequential, solve_triangular

try:
    __version__ = version("paso-optim")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "PASO",
    "FunctionalOptimizer",
    "PasoResult",
    "SolveResult",
    "__version__",
    "adam",
    "adamw",
    "make_optimizer",
    "sequential",
    "sgd",
    "solve_triangular",
]
