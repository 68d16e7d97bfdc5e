"""OPIC: validation-free evolutionary model merging that preserves in-context learning.

Task vectors (:class:`TaskVector`), task arithmetic with per-task / per-layer /
per-module coefficients (:func:`merge`), TIES and DARE-TIES (:func:`ties_merge`,
:func:`dare_ties_merge`; mergekit's own through :func:`mergekit_merge`), and
:class:`OPIC`, which fits the coefficients with CMA-ES on the merged model's k-shot
log-likelihood of self-generated data (no labels).
"""

from importlib.metadata import PackageNotFoundError, version

from opic_merging.opic import OPIC, as_task_vectors, from_mergekit_config, mergekit_config
from opic_merging.peers import MERGEKIT_METHODS, mergekit_merge
from opic_merging.vectors import (
    GRANULARITIES,
    TaskVector,
    dare,
    dare_ties_merge,
    group_names,
    merge,
    parameter_groups,
    ties_merge,
)

try:
    __version__ = version("opic-merging")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "GRANULARITIES",
    "MERGEKIT_METHODS",
    "OPIC",
    "TaskVector",
    "__version__",
    "as_task_vectors",
    "dare",
    "dare_ties_merge",
    "from_mergekit_config",
    "group_names",
    "merge",
    "mergekit_config",
    "mergekit_merge",
    "parameter_groups",
    "ties_merge",
]
