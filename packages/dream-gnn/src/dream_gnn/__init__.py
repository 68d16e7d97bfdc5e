"""DREAM: reliability-weighted GNN training under label noise (dual-standard anchors)."""

from importlib.metadata import PackageNotFoundError, version

from dream_gnn.baselines import (
    cleanlab_filter,
    correct_and_smooth,
    coteaching,
    forget_rate_schedule,
    small_loss_selection,
)
from dream_gnn.losses import DREAMLoss, dream_loss, gce_loss
from dream_gnn.models import GCN
from dream_gnn.noise import add_label_noise
from dream_gnn.ppr import personalized_pagerank
from dream_gnn.trainer import DREAMTrainer, fit_classifier

try:
    __version__ = version("dream-gnn")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "GCN",
    "DREAMLoss",
    "DREAMTrainer",
    "__version__",
    "add_label_noise",
    "cleanlab_filter",
    "correct_and_smooth",
    "coteaching",
    "dream_loss",
    "fit_classifier",
    "forget_rate_schedule",
    "gce_loss",
    "personalized_pagerank",
    "small_loss_selection",
]
