"""Score Anisotropy Directions: architecture-dependent NTK directions of score models.

The SADs of an eps-prediction network are the eigenvectors of its output-space neural
tangent kernel averaged over noisy inputs (our reading of the ICML 2026 abstract); they
are computed before training and predict which data directions the model fits best.
"""

from importlib.metadata import PackageNotFoundError, version

from score_anisotropy.ddpm import (
    per_direction_wasserstein,
    sample_ddpm,
    sliced_w2,
    train_ddpm,
    w2_exact,
)
from score_anisotropy.models import DDPMSchedule, ScoreCNN, ScoreMLP, ScoreUNet, ScoreViT
from score_anisotropy.sad import (
    SADResult,
    alignment,
    dct_basis,
    dct_frequency,
    empirical_ntk,
    ntk_matvec,
    sad,
    spectral_stats,
)

try:
    __version__ = version("score-anisotropy")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "DDPMSchedule",
    "SADResult",
    "ScoreCNN",
    "ScoreMLP",
    "ScoreUNet",
    "ScoreViT",
    "__version__",
    "alignment",
    "dct_basis",
    "dct_frequency",
    "empirical_ntk",
    "ntk_matvec",
    "per_direction_wasserstein",
    "sad",
    "sample_ddpm",
    "sliced_w2",
    "spectral_stats",
    "train_ddpm",
    "w2_exact",
]
