"""DeepWalk with negative sampling, with its optimisation trajectory on record.

The estimator :class:`DeepWalkSGNS`, random walks, the linearised SGNS matrix M, its
target subspace, the alignment of an embedding with it, and the SBM used to check
cluster recovery.
"""

from importlib.metadata import PackageNotFoundError, version

from .graph import as_adjacency, largest_component, random_walks, sbm_graph, skipgram_pairs
from .sgns import DeepWalkSGNS, sgns_gradients, sgns_loss
from .theory import (
    Alignment,
    TargetSubspace,
    alignment,
    cluster_ari,
    energy,
    netmf_embedding,
    sgns_matrix,
    spectral_embedding,
    target_subspace,
)

try:
    __version__ = version("deepwalk-sgns")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "Alignment",
    "DeepWalkSGNS",
    "TargetSubspace",
    "__version__",
    "alignment",
    "as_adjacency",
    "cluster_ari",
    "energy",
    "largest_component",
    "netmf_embedding",
    "random_walks",
    "sbm_graph",
    "sgns_gradients",
    "sgns_loss",
    "sgns_matrix",
    "skipgram_pairs",
    "spectral_embedding",
    "target_subspace",
]
