"""lipschitz-denoiser: a denoiser that is nonexpansive by construction, and convergent PnP.

Public API:
    PermutationDenoiser: Lip(D) <= 1 from convex combinations of (signed) lattice
        permutations and 1-Lipschitz channel sorting.
    PermutationConv2d, MaxMin: its layers; conv_operator_norm, torus_norm_bound,
        schur_bound: layer norms (exact on a lattice, provable on every lattice, loose).
    DnCNN: our own DnCNN-style baseline (optionally with torch's spectral_norm).
    as_deepinv_denoiser, deepinv_dncnn, jacobian_penalty: deepinv interoperability
        (a ``deepinv.models.Denoiser`` wrapper; deepinv's DnCNN and the Jacobian penalty
        of Pesquet et al. 2021 as baselines); deepinv is imported only when called.
    certify_lipschitz, adversarial_lipschitz, LipschitzCertificate: upper and lower bounds.
    Blur, Downsample, Mask, ImagingOperator, gaussian_kernel, motion_kernel: forward operators.
    pnp_forward_backward, pnp_douglas_rachford, PnPResult: plug-and-play reconstruction.
    train_denoiser, training_patches: training on patches of real images.
"""

from importlib.metadata import PackageNotFoundError, version

from lipschitz_denoiser.certify import (
    LipschitzCertificate,
    adversarial_lipschitz,
    certify_lipschitz,
)
from lipschitz_denoiser.deepinv_compat import as_deepinv_denoiser, deepinv_dncnn, jacobian_penalty
from lipschitz_denoiser.layers import (
    MaxMin,
    PermutationConv2d,
    conv_operator_norm,
    schur_bound,
    torus_norm_bound,
)
from lipschitz_denoiser.models import DnCNN, PermutationDenoiser
from lipschitz_denoiser.operators import (
    Blur,
    Downsample,
    ImagingOperator,
    Mask,
    gaussian_kernel,
    motion_kernel,
)
from lipschitz_denoiser.pnp import PnPResult, pnp_douglas_rachford, pnp_forward_backward
from lipschitz_denoiser.training import train_denoiser, training_patches

try:
    __version__ = version("lipschitz-denoiser")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "Blur",
    "DnCNN",
    "Downsample",
    "ImagingOperator",
    "LipschitzCertificate",
    "Mask",
    "MaxMin",
    "PermutationConv2d",
    "PermutationDenoiser",
    "PnPResult",
    "__version__",
    "adversarial_lipschitz",
    "as_deepinv_denoiser",
    "certify_lipschitz",
    "conv_operator_norm",
    "deepinv_dncnn",
    "gaussian_kernel",
    "jacobian_penalty",
    "motion_kernel",
    "pnp_douglas_rachford",
    "pnp_forward_backward",
    "schur_bound",
    "torus_norm_bound",
    "train_denoiser",
    "training_patches",
]
