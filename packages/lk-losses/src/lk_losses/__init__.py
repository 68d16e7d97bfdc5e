"""LK losses: train speculative-decoding drafts for the acceptance rate, not KL.

Public API:

- :func:`lk_loss` / :class:`LKLoss`: the losses (``"tv"``, ``"log_alpha"``,
  ``"hybrid"``, and ``"kl"`` for comparison) on (*, vocab) logits, with a target given
  as logits, log-probs, top-k ``(indices, values)``, or log-probs on a subset of the
  vocabulary; :class:`LKLoss` adapts the hybrid's KL weight and keeps it in
  ``state_dict``.
- :func:`kl_weight_schedule`: a fixed schedule of the hybrid's KL weight.
- :func:`acceptance_rate`, :func:`expected_acceptance_length`,
  :func:`sequence_acceptance_length`: the metrics.
- :func:`speculative_generate`: a batched, key-value-cached speculative-sampling
  decoder (draft vocabularies too) that records the acceptance length of every cycle.
"""

from importlib.metadata import PackageNotFoundError, version

from lk_losses.losses import (
    LK_KINDS,
    LKLoss,
    acceptance_rate,
    kl_weight_schedule,
    lk_loss,
    log_acceptance,
)
from lk_losses.speculative import (
    SpeculativeOutput,
    expected_acceptance_length,
    sequence_acceptance_length,
    speculative_generate,
)

try:
    __version__ = version("lk-losses")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "LK_KINDS",
    "LKLoss",
    "SpeculativeOutput",
    "__version__",
    "acceptance_rate",
    "expected_acceptance_length",
    "kl_weight_schedule",
    "lk_loss",
    "log_acceptance",
    "sequence_acceptance_length",
    "speculative_generate",
]
