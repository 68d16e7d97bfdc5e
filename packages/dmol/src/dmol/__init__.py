"""DMoL: depth-progressive monotonic learning.

Local belief objectives refined across depth, unlocked block updates.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dmol")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

from dmol.models import (
    GCNLayer,
    PairNorm,
    ResidualMLPBlock,
    gcn_net,
    mlp_net,
    normalized_adjacency,
)
from dmol.net import BELIEFS, DMoLNet, zero_head_
from dmol.train import BPTrainer, DMoLTrainer

__all__ = [
    "BELIEFS",
    "BPTrainer",
    "DMoLNet",
    "DMoLTrainer",
    "GCNLayer",
    "PairNorm",
    "ResidualMLPBlock",
    "__version__",
    "gcn_net",
    "mlp_net",
    "normalized_adjacency",
    "zero_head_",
]
