"""Validation of inputs at the public boundary (clear errors, never silent garbage)."""

from __future__ import annotations

import torch
from torch import Tensor


def check_obs(obs: object, obs_dim: int, name: str = "obs") -> None:
    """Raise if ``obs`` is not a finite float tensor of shape (n, obs_dim)."""
    if not isinstance(obs, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(obs).__name__}")
    if not obs.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {obs.dtype}")
    if obs.ndim != 2 or obs.shape[1] != obs_dim:
        raise ValueError(
            f"{name} must have shape (batch, {obs_dim}), got {tuple(obs.shape)}; "
            f"the observation size does not match the policy/model"
        )
    if not torch.isfinite(obs).all():
        raise ValueError(f"{name} contains NaN or inf values")


def check_action(action: object, act_dim: int, batch: int | None = None) -> None:
    """Raise if ``action`` is not a finite float tensor of shape (batch, act_dim)."""
    if not isinstance(action, Tensor):
        raise TypeError(f"action must be a torch.Tensor, got {type(action).__name__}")
    if action.ndim != 2 or action.shape[1] != act_dim:
        raise ValueError(f"action must have shape (batch, {act_dim}), got {tuple(action.shape)}")
    if batch is not None and action.shape[0] != batch:
        raise ValueError(f"action has batch {action.shape[0]} but obs has batch {batch}")
    if not torch.isfinite(action).all():
        raise ValueError("action contains NaN or inf values; expected finite actions")


def check_positive_int(value: object, name: str, minimum: int = 1) -> int:
    """Return ``value`` as int if it is an integer >= ``minimum``; raise otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_finite_array(x, name: str) -> None:
    """Raise ValueError if a numpy array (from an environment) has NaN/inf."""
    import numpy as np

    arr = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} from the environment contains NaN or inf: {arr!r}")
