"""Denoisers: the nonexpansive permutation denoiser and the DnCNN-style baselines."""

from __future__ import annotations

import itertools

import torch
from icml26_core.validation import check_choice, check_int
from torch import nn
from torch.nn.utils.parametrizations import spectral_norm as _spectral_norm

from lipschitz_denoiser._validation import (
    check_image_batch,
    check_noise_level,
    check_positive_int,
    check_unit_interval,
)
from lipschitz_denoiser.layers import NORMALIZATIONS, MaxMin, PermutationConv2d

__all__ = ["DnCNN", "PermutationDenoiser"]


def _inputs(model: nn.Module, x: torch.Tensor, sigma: object) -> torch.Tensor:
    validate = getattr(model, "validate", True)
    check_image_batch(
        x, "x", channels=model.channels, min_size=max(1, model.kernel_size // 2),
        allow_empty=True, check_values=validate,
    )  # fmt: skip
    if not model.noise_level_input:
        if sigma is not None:
            check_noise_level(sigma, "sigma", x, check_values=validate)  # still reject sigma < 0
        return x
    if sigma is None:
        raise ValueError(
            "sigma is required: this model takes the noise level as an input "
            "(a float >= 0, an (N,) tensor or an (N, 1, H, W) noise map; intensity units "
            "of [0, 1] images)"
        )
    s = check_noise_level(sigma, "sigma", x, check_values=validate)
    return torch.cat([x, s.expand(x.shape[0], 1, *x.shape[-2:])], dim=1)


class PermutationDenoiser(nn.Module):
    r"""A denoiser whose global Lipschitz constant is at most ``lipschitz`` <= 1 by construction.

    .. math::

        D(x) = (1 - \theta)\, x + \theta \rho\, N(x), \qquad
        N = L_K \circ \phi \circ L_{K-1} \circ \dots \circ \phi \circ L_1,

    where every :math:`L_k` is a :class:`~lipschitz_denoiser.layers.PermutationConv2d`
    (a combination of the image lattice's shift permutations, normalised per frequency
    of the shift group to operator norm <= 1 on every lattice),
    :math:`\phi` is 1-Lipschitz (:class:`~lipschitz_denoiser.layers.MaxMin`, a
    data-dependent permutation of channels, or ReLU), :math:`\rho` = ``lipschitz``,
    and :math:`\theta = \theta_{max}\,\mathrm{sigmoid}(t)` is learned. Hence

    .. math::

        \mathrm{Lip}(D) \le (1 - \theta) + \theta \rho \prod_k \|L_k\| \le 1 - \theta + \theta\rho,

    for every input and every parameter value (the noise-level channel, when used,
    is a constant for a fixed sigma and does not enter the constant). With
    ``max_skip <= 0.5`` and ``rho < 1``, ``2D - I`` is a contraction too (the
    condition of plug-and-play Douglas-Rachford).

    Args:
        channels: Image channels (1 for gray, 3 for RGB).
        features: Hidden channels, even when ``activation="maxmin"``.
        depth: Number of convolutions, >= 2.
        kernel_size: Odd kernel side of each convolution.
        activation: ``"maxmin"`` (default) or ``"relu"``.
        noise_level_input: Feed the noise level as an extra constant channel.
        lipschitz: :math:`\rho` in (0, 1], the bound on ``N``; < 1 makes ``D`` a
            strict contraction.
        max_skip: :math:`\theta_{max}` in (0, 1].
        normalization: ``"spectral"`` (tight, default) or ``"schur"`` (the loose
            construction, an ablation); see :class:`~lipschitz_denoiser.layers.PermutationConv2d`.
        grid: Frequencies per axis of the spectral bound.
        validate: Check every forward's values (NaN/inf input, negative ``sigma``):
            a debug mode, since reading the data synchronises an accelerator. Shapes,
            channels and Python-number noise levels are always checked.

    Shape:
        ``forward(x, sigma)``: x (N, channels, H, W) float, N >= 0 (an empty batch gives
        an empty output); sigma a float >= 0, an (N,) tensor or a per-pixel noise map
        (N, 1, H, W), intensity units (images in [0, 1]); output like x. The bound
        holds in eval mode (training mode uses a power-iteration estimate of the same
        normalisation; see :class:`~lipschitz_denoiser.layers.PermutationConv2d`).

    Raises:
        TypeError: On an argument of the wrong type.
        ValueError: On invalid hyperparameters; in ``forward`` on a wrong channel
            count, a missing ``sigma``, a negative float ``sigma``, or (with
            ``validate=True``) NaN/inf input or negative ``sigma`` entries.

    References:
        The ICML 2026 paper (abstract only).

    Example:
        >>> model = PermutationDenoiser(channels=1, features=16, depth=4).eval()
        >>> x = torch.rand(2, 1, 32, 32)
        >>> model(x, sigma=0.1).shape
        torch.Size([2, 1, 32, 32])
        >>> float(model.lipschitz_bound()) <= 1.0
        True
    """

    def __init__(
        self,
        channels: int = 1,
        features: int = 32,
        depth: int = 6,
        kernel_size: int = 3,
        *,
        activation: str = "maxmin",
        noise_level_input: bool = True,
        lipschitz: float = 1.0,
        max_skip: float = 1.0,
        normalization: str = "spectral",
        grid: int = 128,
        validate: bool = False,
    ) -> None:
        super().__init__()
        check_positive_int(channels, "channels")
        check_positive_int(features, "features")
        check_int("depth", depth, low=2)
        check_choice("activation", activation, ("maxmin", "relu"))
        check_choice("normalization", normalization, NORMALIZATIONS)
        if activation == "maxmin" and features % 2:
            raise ValueError(f"features must be even for activation='maxmin', got {features}")
        self.channels = channels
        self.features = features
        self.depth = depth
        self.kernel_size = kernel_size
        self.activation = activation
        self.noise_level_input = bool(noise_level_input)
        self.lipschitz = check_unit_interval(lipschitz, "lipschitz")
        self.max_skip = check_unit_interval(max_skip, "max_skip")
        self.normalization = normalization
        self.validate = bool(validate)
        c_in = channels + int(self.noise_level_input)
        widths = [c_in] + [features] * (depth - 1) + [channels]
        self.convs = nn.ModuleList(
            PermutationConv2d(a, b, kernel_size, normalization=normalization, grid=grid)
            for a, b in itertools.pairwise(widths)
        )
        self.act = MaxMin() if activation == "maxmin" else nn.ReLU()
        self.skip_logit = nn.Parameter(torch.tensor(2.0))
        self._init_identity_path()

    @torch.no_grad()
    def _init_identity_path(self) -> None:
        """Start with N(x) = x on nonnegative images: a path of signed permutations.

        The first layer sends image channel ``o % channels`` to hidden channel ``o``
        with sign + in the first half and - in the second (MaxMin pairs ``j`` with
        ``j + features/2``, so each pair is ``(x, -x)``); the hidden layers are the
        identity; the last layer sums the pairs back with signs +/-. After either
        normalisation every layer is an isometry on this path, so the network starts
        as the identity on images in [0, 1] instead of a strongly attenuating map.
        """
        c = self.kernel_size // 2
        half = self.features // 2
        first, last = self.convs[0], self.convs[-1]
        first.weight.mul_(0.0).add_(torch.randn_like(first.weight) * 1e-3)
        last.weight.mul_(0.0).add_(torch.randn_like(last.weight) * 1e-3)
        for o in range(self.features):
            sign = 1.0 if o < half else -1.0
            first.weight[o, o % self.channels, c, c] = sign
            last.weight[o % self.channels, o, c, c] = sign

    @property
    def theta(self) -> torch.Tensor:
        """The learned weight of the network branch, in (0, max_skip)."""
        return self.max_skip * torch.sigmoid(self.skip_logit)

    def network(self, inp: torch.Tensor) -> torch.Tensor:
        """The branch ``N`` (without the factor ``rho``) on the prepared input."""
        h = inp
        for k, conv in enumerate(self.convs):
            h = conv(h)
            if k < len(self.convs) - 1:
                h = self.act(h)
        return h

    def forward(self, x: torch.Tensor, sigma: float | torch.Tensor | None = None) -> torch.Tensor:
        """Denoise ``x`` (N, C, H, W) at noise level ``sigma``."""
        inp = _inputs(self, x, sigma)
        theta = self.theta
        return (1.0 - theta) * x + theta * self.lipschitz * self.network(inp)

    def layer_bounds(self) -> list[float]:
        """Certified bound of each convolution's operator norm on every lattice (each <= 1)."""
        return [float(conv.lipschitz_bound()) for conv in self.convs]

    def lipschitz_bound(self, layer_bounds: list[float] | None = None) -> torch.Tensor:
        """Certified bound ``(1 - theta) + theta * rho * prod(layer bounds)`` on Lip(D)."""
        bounds = self.layer_bounds() if layer_bounds is None else layer_bounds
        prod = torch.tensor(bounds, dtype=torch.float64).prod()
        theta = self.theta.detach().double()
        return (1.0 - theta) + theta * self.lipschitz * prod

    def reflection_bound(self, layer_bounds: list[float] | None = None) -> torch.Tensor:
        """Certified bound ``|1 - 2 theta| + 2 theta rho prod`` on Lip(2D - I)."""
        bounds = self.layer_bounds() if layer_bounds is None else layer_bounds
        prod = torch.tensor(bounds, dtype=torch.float64).prod()
        theta = self.theta.detach().double()
        return (1.0 - 2.0 * theta).abs() + 2.0 * theta * self.lipschitz * prod


class DnCNN(nn.Module):
    r"""DnCNN-style residual CNN baseline: ``D(x) = x - R(x)``, conv-ReLU stack, no BN.

    With ``spectral_norm=True`` every convolution is wrapped in
    ``torch.nn.utils.parametrizations.spectral_norm`` (a soft constraint: it
    normalises the reshaped (C_out, C_in k k) matrix, not the convolution operator,
    and the residual form allows Lip up to ``1 + prod``). Circular padding, as in
    :class:`PermutationDenoiser`, so the two see the same lattice.

    Args:
        channels: Image channels.
        features: Hidden channels.
        depth: Number of convolutions, >= 2.
        kernel_size: Odd kernel side.
        noise_level_input: Feed the noise level as an extra constant channel.
        spectral_norm: Wrap each convolution in spectral normalisation.

    References:
        Zhang, Zuo, Chen, Meng, Zhang (2017), Beyond a Gaussian denoiser: residual
        learning of deep CNN for image denoising, IEEE TIP. Miyato et al. (2018),
        Spectral normalization for GANs, ICLR.

    Example:
        >>> DnCNN(features=16, depth=4)(torch.rand(1, 1, 32, 32), sigma=0.1).shape
        torch.Size([1, 1, 32, 32])
    """

    def __init__(
        self,
        channels: int = 1,
        features: int = 32,
        depth: int = 6,
        kernel_size: int = 3,
        *,
        noise_level_input: bool = True,
        spectral_norm: bool = False,
    ) -> None:
        super().__init__()
        check_positive_int(channels, "channels")
        check_positive_int(features, "features")
        check_positive_int(depth, "depth")
        if depth < 2:
            raise ValueError(f"depth must be >= 2, got {depth}")
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be a positive odd int, got {kernel_size!r}")
        self.channels = channels
        self.features = features
        self.depth = depth
        self.kernel_size = kernel_size
        self.noise_level_input = bool(noise_level_input)
        self.spectral_norm = bool(spectral_norm)
        c_in = channels + int(self.noise_level_input)
        widths = [c_in] + [features] * (depth - 1) + [channels]
        convs = []
        for k, (a, b) in enumerate(itertools.pairwise(widths)):
            conv = nn.Conv2d(
                a,
                b,
                kernel_size,
                padding=kernel_size // 2,
                padding_mode="circular",
                bias=k < depth - 1,
            )
            convs.append(_spectral_norm(conv) if spectral_norm else conv)
        self.convs = nn.ModuleList(convs)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor, sigma: float | torch.Tensor | None = None) -> torch.Tensor:
        """Denoise ``x`` (N, C, H, W) at noise level ``sigma``."""
        h = _inputs(self, x, sigma)
        for k, conv in enumerate(self.convs):
            h = conv(h)
            if k < len(self.convs) - 1:
                h = self.act(h)
        return x - h

    def conv_weights(self) -> list[torch.Tensor]:
        """The weights applied by each convolution (after spectral normalisation)."""
        return [conv.weight.detach() for conv in self.convs]
