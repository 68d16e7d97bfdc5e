"""Minimal augmentation for robust safety alignment by submodular selection of group actions.

Augmentations are group actions on prompts (:mod:`submodular_augment.transforms`); the
robustness gain of a set of them is a normalized monotone submodular function
(:class:`RobustnessGain`, facility location over evaluation actions); the minimal
augmentation is its greedy cover (:func:`greedy_select`), used with :func:`augment`
and checked with :func:`refusal_rate`.
"""

from importlib.metadata import PackageNotFoundError, version

from submodular_augment.alignment import (
    COMPLIANCE,
    PROMPT_TEMPLATE,
    REFUSAL,
    align,
    augment,
    refusal_margin,
    refusal_rate,
)
from submodular_augment.selection import (
    FacilityLocationGain,
    RobustnessGain,
    Selection,
    SetFunction,
    greedy_select,
    modular_top_k,
    representation_shifts,
)
from submodular_augment.transforms import (
    Atbash,
    CaesarShift,
    CaseInversion,
    Composition,
    GroupAction,
    Identity,
    Leetspeak,
    WordReversal,
    WordRotation,
    parse_action,
)

try:
    __version__ = version("submodular-augment")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "COMPLIANCE",
    "PROMPT_TEMPLATE",
    "REFUSAL",
    "Atbash",
    "CaesarShift",
    "CaseInversion",
    "Composition",
    "FacilityLocationGain",
    "GroupAction",
    "Identity",
    "Leetspeak",
    "RobustnessGain",
    "Selection",
    "SetFunction",
    "WordReversal",
    "WordRotation",
    "__version__",
    "align",
    "augment",
    "greedy_select",
    "modular_top_k",
    "parse_action",
    "refusal_margin",
    "refusal_rate",
    "representation_shifts",
]
