"""DMoL: depth-progressive monotonic learning.

Local belief objectives refined across depth, unlocked block updates.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dmol")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

from dmol.models import (
    ConvResBlock,
    GCNLayer,
    PairNorm,
    ResidualMLPBlock,
    TimeMLPBlock,
    UNetBlock,
    cnn_net,
    gcn_net,
    mlp_net,
    normalized_adjacency,
    pool_head,
    resnet18_net,
    time_embedding,
    unet_denoiser,
)
from dmol.net import BELIEFS, DMoLNet, zero_head_
from dmol.train import BPTrainer, DMoLTrainer

__all__ = [
    "BELIEFS",
    "BPTrainer",
    "ConvResBlock",
    "DMoLNet",
    "DMoLTrainer",
    "GCNLayer",
    "PairNorm",
    "ResidualMLPBlock",
    "TimeMLPBlock",
    "UNetBlock",
    "__version__",
    "cnn_net",
    "gcn_net",
    "mlp_net",
    "normalized_adjacency",
    "pool_head",
    "resnet18_net",
    "time_embedding",
    "unet_denoiser",
    "zero_head_",
]
