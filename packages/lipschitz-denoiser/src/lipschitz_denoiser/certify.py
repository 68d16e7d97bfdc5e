"""Lipschitz certificates: per-layer bounds, their product, and an adversarial lower bound."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from lipschitz_denoiser._validation import check_image_batch, check_positive_int
from lipschitz_denoiser.layers import conv_operator_norm
from lipschitz_denoiser.models import DnCNN, PermutationDenoiser

__all__ = ["LipschitzCertificate", "adversarial_lipschitz", "certify_lipschitz"]


@dataclass
class LipschitzCertificate:
    """Upper and lower bounds on the global Lipschitz constant of a denoiser (l2 -> l2).

    Attributes:
        layer_bounds: Per-convolution bound used by the certificate: for
            ``PermutationDenoiser`` its layers' bound, valid on every lattice (the
            spectral torus bound or Schur's); the exact norm on ``image_size`` for
            ``DnCNN``; empty for other models.
        layer_norms: Exact per-convolution operator norms on ``image_size`` (FFT).
        certified_bound: Upper bound on Lip(D) from ``layer_bounds`` and the skip
            structure: ``(1 - theta) + theta rho prod`` (ours) or ``1 + prod`` (DnCNN,
            residual ``x - R(x)``); inf for other models (no certificate).
        lattice_bound: The same from ``layer_norms`` (tighter; for ``image_size`` only).
        reflection_bound: Bound on Lip(2D - I) (ours only, else None).
        empirical_lower_bound: Largest ratio ||D(x) - D(y)|| / ||x - y|| found.
        image_size: Lattice ``(H, W)`` of the exact norms and the search.
    """

    layer_bounds: list[float]
    layer_norms: list[float]
    certified_bound: float
    lattice_bound: float
    reflection_bound: float | None
    empirical_lower_bound: float
    image_size: tuple[int, int]

    @property
    def consistent(self) -> bool:
        """No pair found exceeds the certificate (up to float64 rounding, 1e-9 relative)."""
        return self.empirical_lower_bound <= self.certified_bound * (1 + 1e-9)


def adversarial_lipschitz(
    fn: Callable[[torch.Tensor], torch.Tensor],
    inputs: torch.Tensor,
    *,
    steps: int = 100,
    lr: float = 0.02,
    seed: int = 0,
) -> float:
    r"""Lower bound on Lip(fn) by gradient ascent on pairs: max ||fn(x) - fn(y)|| / ||x - y||.

    Each input starts a search over ``x`` (from the input) and ``y = x + s u/||u||``
    (a random direction; half of the starts at a tiny scale ``s``, probing the local
    Jacobian, half at a large one); Adam ascends the ratio in ``x``, ``u`` and
    ``log s``. The best ratio seen at any step is returned. Run it in float64 for
    rounding well below 1e-9.

    Args:
        fn: Map (N, C, H, W) -> (N, ...), differentiable.
        inputs: Starting points (N, C, H, W); each is one search. Not modified.
        steps: Ascent steps, >= 1.
        lr: Adam learning rate.
        seed: Seed of the random directions.

    Returns:
        The largest ratio found (a lower bound on the Lipschitz constant).

    Raises:
        TypeError, ValueError: If ``inputs`` is not a float (N, C, H, W) tensor or
            ``steps < 1``.
    """
    check_image_batch(inputs, "inputs")
    check_positive_int(steps, "steps")
    gen = torch.Generator().manual_seed(seed)
    n = inputs.shape[0]
    x = inputs.detach().clone().requires_grad_(True)
    u = torch.randn(inputs.shape, generator=gen, dtype=inputs.dtype).to(inputs.device)
    u.requires_grad_(True)
    scale0 = torch.where(torch.arange(n) % 2 == 0, -6.0, -0.5).to(inputs)
    log_s = scale0.clone().requires_grad_(True)
    opt = torch.optim.Adam([x, u, log_s], lr=lr)
    best = 0.0
    for _ in range(steps):
        opt.zero_grad()
        norms = u.flatten(1).norm(dim=1).clamp_min(1e-30)
        unit = u / norms.reshape(-1, *([1] * (inputs.ndim - 1)))
        d = torch.exp(log_s).reshape(-1, *([1] * (inputs.ndim - 1))) * unit
        diff = fn(x + d) - fn(x)
        ratio = diff.flatten(1).norm(dim=1) / d.flatten(1).norm(dim=1)
        best = max(best, float(ratio.detach().max()))
        (-ratio.sum()).backward()
        opt.step()
    return best


def _layer_norms(weights: list[torch.Tensor], image_size: tuple[int, int]) -> list[float]:
    return [conv_operator_norm(w, image_size) for w in weights]


@torch.no_grad()
def _prepare(model: nn.Module) -> nn.Module:
    clone = copy.deepcopy(model).to(dtype=torch.float64)
    clone.eval()
    for p in clone.parameters():
        p.requires_grad_(False)
    return clone


def certify_lipschitz(
    model: nn.Module,
    image_size: tuple[int, int] = (32, 32),
    *,
    inputs: torch.Tensor | None = None,
    sigma: float | None = None,
    n_starts: int = 8,
    steps: int = 100,
    lr: float = 0.02,
    seed: int = 0,
) -> LipschitzCertificate:
    """Certify a denoiser's Lipschitz constant and probe it adversarially.

    The upper bound comes from the architecture (per-layer operator-norm bounds
    times each other, combined with the skip connection); the lower bound from
    :func:`adversarial_lipschitz` on a float64 copy of the model (the model itself
    is not changed). For models with a noise-level input, ``sigma`` is held fixed
    (the constant channel does not enter the constant).

    Args:
        model: A denoiser ``model(x, sigma)``. :class:`PermutationDenoiser` and
            :class:`DnCNN` get a certificate; any other module gets only the
            adversarial lower bound (``certified_bound`` inf).
        image_size: ``(H, W)`` of the lattice for exact norms and the search.
        inputs: Starting points (N, C, H, W) of the search, e.g. noisy images; default
            ``n_starts`` uniform random images of ``image_size``.
        sigma: Noise level passed to the model (required if it takes one).
        n_starts: Random starts when ``inputs`` is None.
        steps: Ascent steps of the search (0 skips it: lower bound 0).
        lr: Adam learning rate of the search.
        seed: Seed of the random starts and directions.

    Returns:
        A :class:`LipschitzCertificate`.

    Raises:
        TypeError: If ``model`` is not an ``nn.Module``.
        ValueError: If ``sigma`` is missing for a model that needs it, ``inputs`` is
            missing for a model without a ``channels`` attribute, or on bad sizes.

    Example:
        >>> model = PermutationDenoiser(features=8, depth=3)
        >>> cert = certify_lipschitz(model, (16, 16), sigma=0.1, steps=20)
        >>> cert.certified_bound <= 1.0 and cert.consistent
        True
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    h, w = (int(v) for v in image_size)
    ks = getattr(model, "kernel_size", 1)
    if h < ks or w < ks:
        raise ValueError(f"image_size {(h, w)} must be at least the kernel size {ks}")
    if getattr(model, "noise_level_input", False) and sigma is None:
        raise ValueError("sigma is required: this model takes the noise level as an input")
    m = _prepare(model)
    if isinstance(m, PermutationDenoiser):
        weights = [conv.normalized_weight() for conv in m.convs]
        layer_bounds = m.layer_bounds()
        layer_norms = _layer_norms(weights, (h, w))
        certified = float(m.lipschitz_bound(layer_bounds))
        lattice = float(m.lipschitz_bound(layer_norms))
        reflection: float | None = float(m.reflection_bound(layer_bounds))
    elif isinstance(m, DnCNN):
        layer_norms = _layer_norms(m.conv_weights(), (h, w))
        layer_bounds = list(layer_norms)
        certified = lattice = 1.0 + math.prod(layer_norms)
        reflection = None
    else:
        layer_bounds, layer_norms = [], []
        certified = lattice = math.inf
        reflection = None
    lower = 0.0
    if steps > 0:
        if inputs is None:
            if not hasattr(m, "channels"):
                raise ValueError("inputs are required for a model without a channels attribute")
            gen = torch.Generator().manual_seed(seed)
            inputs = torch.rand(n_starts, m.channels, h, w, generator=gen, dtype=torch.float64)
        check_image_batch(inputs, "inputs", channels=getattr(m, "channels", None))
        x = inputs.detach().to(dtype=torch.float64, device=next(m.parameters()).device)
        with torch.enable_grad():
            lower = adversarial_lipschitz(lambda z: m(z, sigma), x, steps=steps, lr=lr, seed=seed)
    return LipschitzCertificate(
        layer_bounds=[float(b) for b in layer_bounds],
        layer_norms=[float(n) for n in layer_norms],
        certified_bound=certified,
        lattice_bound=lattice,
        reflection_bound=reflection,
        empirical_lower_bound=lower,
        image_size=(h, w),
    )
