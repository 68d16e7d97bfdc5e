"""Transformers trained to descend the loss layer by layer (primal-dual training).

Public API: :class:`DescentConstraints` (the constraints and their multipliers),
:class:`PrimalDualTrainer`, :class:`UnrolledTransformer`, :func:`with_layer_heads`,
:func:`layer_losses`, :func:`is_monotone`, :func:`descent_share` and the video loader
:func:`load_video`.
"""

from importlib.metadata import PackageNotFoundError, version

from descent_transformers._data import load_video
from descent_transformers.constraints import DescentConstraints
from descent_transformers.models import LayerHeads, UnrolledTransformer, with_layer_heads
from descent_transformers.training import (
    PrimalDualTrainer,
    descent_share,
    is_monotone,
    layer_losses,
    layer_predictions,
)

try:
    __version__ = version("descent-transformers")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "DescentConstraints",
    "LayerHeads",
    "PrimalDualTrainer",
    "UnrolledTransformer",
    "__version__",
    "descent_share",
    "is_monotone",
    "layer_losses",
    "layer_predictions",
    "load_video",
    "with_layer_heads",
]
