"""deepinv interoperability: our denoiser in deepinv's solvers, deepinv's baselines in ours.

``deepinv`` (DeepInverse, on the registry) is optional: it is imported only inside these
functions (``pip install 'lipschitz-denoiser[repro]'`` brings it).

* :func:`as_deepinv_denoiser` wraps any ``model(x, sigma)`` denoiser as a
  ``deepinv.models.Denoiser`` subclass, so it drops into ``deepinv.optim.PnP`` and
  deepinv's plug-and-play solvers.
* :func:`deepinv_dncnn` builds deepinv's ``DnCNN`` (its layers and forward, unchanged)
  with the noise level as a second input channel, the baseline of the experiment.
* :func:`jacobian_penalty` is the soft Lipschitz constraint of Pesquet et al. (2021):
  the spectral norm of the denoiser's Jacobian at random points, by deepinv's
  ``JacobianSpectralNorm`` (power iteration with double backpropagation), penalised
  above ``1 - eps``.

References:
    Tachella et al. (2025), DeepInverse: a Python package for solving imaging inverse
    problems with deep learning, JOSS. Pesquet, Repetti, Terris, Wiaux (2021), Learning
    maximally monotone operators for image recovery, SIAM J. Imaging Sci.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from icml26_core.validation import check_float, check_int
from torch import nn

__all__ = ["as_deepinv_denoiser", "deepinv_dncnn", "jacobian_penalty"]


def _deepinv():
    try:
        import deepinv
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "this function needs deepinv: pip install 'lipschitz-denoiser[repro]' "
            "(or pip install deepinv)"
        ) from err
    return deepinv


def as_deepinv_denoiser(model: nn.Module) -> nn.Module:
    """Wrap a denoiser ``model(x, sigma)`` as a ``deepinv.models.Denoiser``.

    The wrapper's ``forward(x, sigma, **kwargs)`` calls ``model(x, sigma)`` (extra keyword
    arguments that deepinv passes are ignored); ``sigma`` may be a float, a (B,) tensor
    or a noise map, as :class:`~lipschitz_denoiser.PermutationDenoiser` accepts. The
    model is a submodule, so ``.to``, ``.eval`` and ``state_dict`` reach it.

    Args:
        model: The denoiser, e.g. a :class:`~lipschitz_denoiser.PermutationDenoiser`.

    Returns:
        A ``deepinv.models.Denoiser`` instance holding ``model``.

    Raises:
        TypeError: If ``model`` is not an ``nn.Module``.
        ImportError: If deepinv is not installed.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    dinv = _deepinv()

    class _Wrapped(dinv.models.Denoiser):
        def __init__(self, inner: nn.Module) -> None:
            super().__init__()
            self.model = inner

        def forward(self, x, sigma=None, **kwargs):
            return self.model(x, sigma)

    _Wrapped.__name__ = _Wrapped.__qualname__ = f"DeepinvDenoiser[{type(model).__name__}]"
    return _Wrapped(model)


class _NoiseConditionalDnCNN(nn.Module):
    """deepinv's DnCNN fed ``[x, sigma map]``; its first output channel is the estimate."""

    def __init__(self, net: nn.Module, channels: int) -> None:
        super().__init__()
        self.net = net
        self.channels = channels

    def forward(self, x: torch.Tensor, sigma=0.0) -> torch.Tensor:
        s = torch.as_tensor(sigma, dtype=x.dtype, device=x.device)
        s = s.reshape(-1, 1, 1, 1) if s.ndim <= 1 else s
        out = self.net(torch.cat([x, s.expand(x.shape[0], 1, *x.shape[-2:])], dim=1))
        return out[:, : self.channels]


def deepinv_dncnn(channels: int = 1, features: int = 32, depth: int = 6) -> nn.Module:
    """Deepinv's ``DnCNN`` (untrained) with the noise level as an input channel.

    deepinv's DnCNN is blind (``forward`` ignores ``sigma``) and residual,
    ``D(x) = x + R(x)``. To give it the same information as our denoiser, it is built
    with ``channels + 1`` input and output channels and fed ``[x, sigma map]``; its
    first ``channels`` outputs are ``x + R([x, sigma])[:channels]``, a noise-conditional
    residual DnCNN with deepinv's layers (zero padding, bias, ReLU, Kaiming init) and
    forward unchanged. The extra output channel is discarded.

    Args:
        channels: Image channels.
        features: Hidden channels (deepinv's ``nf``).
        depth: Number of convolutions (deepinv's ``depth``), >= 2.

    Returns:
        ``module(x, sigma)`` with ``sigma`` a float or (N,) tensor.

    Raises:
        ImportError: If deepinv is not installed.
    """
    check_int("channels", channels, low=1)
    check_int("features", features, low=1)
    check_int("depth", depth, low=2)
    dinv = _deepinv()
    net = dinv.models.DnCNN(
        in_channels=channels + 1, out_channels=channels + 1, depth=depth, nf=features,
        pretrained=None,
    )  # fmt: skip
    return _NoiseConditionalDnCNN(net, channels)


def jacobian_penalty(
    *,
    max_iter: int = 5,
    eps: float = 0.05,
    points: int | None = 2,
) -> Callable[..., torch.Tensor]:
    """The penalty ``max(||J_D(x~)||^2, 1 - eps)`` of Pesquet et al. (2021), as a training hook.

    ``x~`` is a random convex combination of the clean and the noisy patches (their
    construction); ``||J_D(x~)||`` is the spectral norm of the denoiser's Jacobian there,
    from deepinv's ``JacobianSpectralNorm`` (``max_iter`` power steps with double
    backpropagation, differentiable), maximised over the first ``points`` patches of the
    batch. Add ``weight * penalty`` to the MSE (see :func:`~lipschitz_denoiser.train_denoiser`).

    Args:
        max_iter: Power steps per evaluation, >= 1.
        eps: The target ``1 - eps`` below which nothing is penalised, in [0, 1).
        points: Patches of the batch the norm is evaluated on (None: all).

    Returns:
        ``penalty(model, clean, noisy, sigma) -> scalar tensor``.

    Raises:
        ImportError: If deepinv is not installed.
    """
    check_int("max_iter", max_iter, low=1)
    check_float("eps", eps, low=0.0, high=1.0, high_inclusive=False)
    if points is not None:
        check_int("points", points, low=1)
    dinv = _deepinv()
    jsn = dinv.loss.JacobianSpectralNorm(
        max_iter=max_iter, tol=1e-3, eval_mode=False, reduction="max"
    )

    def penalty(model, clean, noisy, sigma):
        k = clean.shape[0] if points is None else min(points, clean.shape[0])
        t = torch.rand(k, 1, 1, 1, dtype=clean.dtype, device=clean.device)
        x = (t * clean[:k] + (1 - t) * noisy[:k]).detach().requires_grad_(True)
        out = model(x, sigma[:k])
        norm = jsn(out, x)
        return torch.clamp(norm**2, min=1.0 - eps)

    return penalty
