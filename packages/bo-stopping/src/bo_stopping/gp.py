"""The surrogate of the loop: BoTorch's default ``SingleTaskGP``, validated, warm-startable."""

from __future__ import annotations

import warnings
from typing import Any

import torch
from botorch.exceptions.errors import ModelFittingError
from botorch.exceptions.warnings import OptimizationWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

__all__ = ["GPFittingWarning", "check_bounds", "fit_gp"]


class GPFittingWarning(RuntimeWarning):
    """Fitting the GP's hyperparameters failed; the model keeps its prior values."""


def fit_gp(
    X: Tensor,
    Y: Tensor,
    bounds: Tensor,
    *,
    hyperparameters_from: SingleTaskGP | None = None,
    optimize: bool = True,
) -> SingleTaskGP:
    """Fit BoTorch's ``SingleTaskGP`` with its default priors by marginal likelihood.

    The model is BoTorch's default ``SingleTaskGP`` (BoTorch >= 0.12): an RBF kernel
    with one lengthscale per input (ARD) under the dimension-scaled log-normal prior
    of Hvarfner et al. (2024), a constant mean, and a Gaussian likelihood whose noise
    is inferred; inputs normalized to ``bounds``, outputs standardized. Hyperparameters
    are fitted by ``fit_gpytorch_mll`` (L-BFGS-B on the marginal log-likelihood).

    Args:
        X: ``(n, d)`` inputs in the original space, float32/float64, finite, n >= 1.
        Y: ``(n,)`` or ``(n, 1)`` observations, finite, objective units.
        bounds: ``(2, d)`` search-space bounds, used to normalize inputs.
        hyperparameters_from: A model from this function (same ``d``) whose kernel,
            mean and noise hyperparameters start the fit (a warm start), or are kept
            as they are with ``optimize=False``.
        optimize: Fit the hyperparameters; False only conditions the GP on the data
            (with ``hyperparameters_from``'s values, or the priors' initial ones).

    Returns:
        The fitted model (predictions in original units).

    Raises:
        ValueError: On wrong shapes, NaN or infinite entries, or ``n = 0``.

    Warns:
        GPFittingWarning: If every fitting attempt failed (BoTorch's
            ``ModelFittingError``); the model is returned with its prior
            hyperparameters, which is usually still usable but worth knowing.
    """
    X = torch.as_tensor(X)
    if X.ndim != 2 or X.shape[0] < 1:
        raise ValueError(f"X must have shape (n, d) with n >= 1, got {tuple(X.shape)}")
    if not X.is_floating_point():
        raise ValueError(f"X must be a floating-point tensor, got {X.dtype}")
    Y = torch.as_tensor(Y, dtype=X.dtype, device=X.device).reshape(-1, 1)
    if Y.shape[0] != X.shape[0]:
        raise ValueError(f"Y has {Y.shape[0]} values but X has {X.shape[0]} rows")
    bounds = check_bounds(bounds, X.dtype, X.device)
    if bounds.shape[1] != X.shape[1]:
        raise ValueError(f"bounds has {bounds.shape[1]} columns but X has {X.shape[1]}")
    for name, t in (("X", X), ("Y", Y)):
        if not bool(torch.isfinite(t).all()):
            raise ValueError(
                f"{name} must be finite; it has {int((~torch.isfinite(t)).sum())} "
                "NaN or infinite entries"
            )
    model = SingleTaskGP(
        X,
        Y,
        input_transform=Normalize(d=X.shape[-1], bounds=bounds),
        outcome_transform=Standardize(m=1),
    )
    if hyperparameters_from is not None:
        keep = ("covar_module.", "mean_module.", "likelihood.")
        state = {k: v for k, v in hyperparameters_from.state_dict().items() if k.startswith(keep)}
        model.load_state_dict(state, strict=False)
    if not optimize:
        return model.eval()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    try:
        with warnings.catch_warnings():
            # BoTorch retries a non-converged fit itself; only its final failure matters
            warnings.simplefilter("ignore", OptimizationWarning)
            fit_gpytorch_mll(mll)
    except ModelFittingError as err:
        warnings.warn(
            f"GP hyperparameter fitting failed on {X.shape[0]} points ({err}); "
            "keeping the prior hyperparameters",
            GPFittingWarning,
            stacklevel=2,
        )
    return model.eval()


def check_bounds(bounds: Any, dtype: torch.dtype, device: torch.device | None) -> Tensor:
    """``bounds`` as a ``(2, d)`` tensor with lower < upper, finite.

    Raises:
        ValueError: Otherwise, naming the dimensions that fail.
    """
    b = torch.as_tensor(bounds, dtype=dtype, device=device)
    if b.ndim != 2 or b.shape[0] != 2 or b.shape[1] < 1:
        raise ValueError(f"bounds must have shape (2, d) with d >= 1, got {tuple(b.shape)}")
    if not torch.all(torch.isfinite(b)):
        raise ValueError("bounds must be finite")
    if not torch.all(b[0] < b[1]):
        bad = torch.nonzero(b[0] >= b[1]).flatten().tolist()
        raise ValueError(f"bounds must have lower < upper in every dimension; violated at {bad}")
    return b
