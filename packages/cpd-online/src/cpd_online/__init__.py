"""CPD Online: adversarial-suffix detection as online change-point detection.

The next-token entropy stream of a chat LM (:class:`EntropyStream`) is standardized by
a robust baseline of its system-prompt entropies and watched by a one-sided CUSUM
(:class:`CUSUMDetector`, :func:`cusum_path`); :class:`CPDClassifier` turns it into a
scikit-learn-style prompt detector, beside the perplexity baselines
(:class:`PerplexityFilter`, :class:`WindowedPerplexity`) and a guard gate
(:class:`GuardGate`).
"""

from importlib.metadata import PackageNotFoundError, version

from cpd_online.cusum import (
    CUSUMDetector,
    CUSUMPath,
    cusum_path,
    robust_baseline,
    siegmund_arl,
    standardize,
)
from cpd_online.detectors import CPDClassifier, GuardGate, PerplexityFilter, WindowedPerplexity
from cpd_online.stream import EntropyStream, StreamResult

try:
    __version__ = version("cpd-online")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "CPDClassifier",
    "CUSUMDetector",
    "CUSUMPath",
    "EntropyStream",
    "GuardGate",
    "PerplexityFilter",
    "StreamResult",
    "WindowedPerplexity",
    "__version__",
    "cusum_path",
    "robust_baseline",
    "siegmund_arl",
    "standardize",
]
