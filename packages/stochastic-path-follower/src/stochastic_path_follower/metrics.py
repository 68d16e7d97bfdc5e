"""Tracking metrics of a decision path against the exact path ``x*_k``."""

from __future__ import annotations

import torch

from stochastic_path_follower.problems import Scenario

__all__ = ["dynamic_regret", "relative_errors", "tracking_error"]


def _check_paths(X: torch.Tensor, xstar: torch.Tensor) -> torch.Tensor:
    for name, v in (("X", X), ("xstar", xstar)):
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(v).__name__}")
    if X.ndim == 2:
        X = X[:, None]
    if (
        X.ndim != 3
        or xstar.ndim != 2
        or X.shape[0] != xstar.shape[0]
        or X.shape[2] != xstar.shape[1]
    ):
        raise ValueError(
            f"X must be (K, d) or (K, B, d) and xstar (K, d) with the same K and d, "
            f"got {tuple(X.shape)} and {tuple(xstar.shape)}"
        )
    if not torch.isfinite(xstar).all():
        raise ValueError("xstar contains NaN or inf")
    return X


def _check_nonzero_rows(xstar: torch.Tensor) -> None:
    zero = (xstar == 0).all(-1)
    if zero.any():
        k = int(torch.nonzero(zero)[0, 0])
        raise ValueError(f"xstar has a zero row (step k = {k}): the relative error is undefined")


def relative_errors(X: torch.Tensor, xstar: torch.Tensor) -> torch.Tensor:
    """``||X_k - x*_k||^2 / ||x*_k||^2`` per step and episode, shape (K, B).

    Args:
        X: Decisions, (K, d) or (K, B, d).
        xstar: The exact path, (K, d), with no zero row.

    Raises:
        TypeError: If ``X`` or ``xstar`` is not a tensor.
        ValueError: On mismatched shapes, a NaN/inf in ``xstar`` or a zero row of it.
    """
    X = _check_paths(X, xstar)
    _check_nonzero_rows(xstar)
    den = (xstar * xstar).sum(-1)
    return ((X - xstar[:, None]) ** 2).sum(-1) / den[:, None]


def tracking_error(X: torch.Tensor, xstar: torch.Tensor) -> torch.Tensor:
    """Mean relative tracking error ``(1/K) sum_k ||X_k - x*_k||^2 / ||x*_k||^2``, (B,).

    Args:
        X: Decisions, (K, d) or (K, B, d).
        xstar: The exact path, (K, d), finite, with no zero row.

    Returns:
        One error per episode, shape (B,) (B = 1 for a (K, d) ``X``). A non-finite
        decision gives an infinite error.

    Raises:
        TypeError: If ``X`` or ``xstar`` is not a tensor.
        ValueError: As :func:`relative_errors`.
    """
    e = relative_errors(X, xstar).mean(0)
    return torch.where(torch.isfinite(e), e, torch.full_like(e, float("inf")))


def dynamic_regret(X: torch.Tensor, scenario: Scenario) -> torch.Tensor:
    """``sum_k f_k(X_k) - f_k(x*_k)`` with the scenario's population losses, shape (B,).

    Args:
        X: Decisions, (K, d) or (K, B, d), a floating tensor.
        scenario: The :class:`~stochastic_path_follower.Scenario` they were made on.

    Raises:
        TypeError: If ``X`` is not a tensor or ``scenario`` not a Scenario.
        ValueError: On a shape that does not match the scenario's path.
    """
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"X must be a torch.Tensor, got {type(X).__name__}")
    if not isinstance(scenario, Scenario):
        raise TypeError(
            f"scenario must follow the Scenario protocol, got {type(scenario).__name__}"
        )
    xstar = scenario.reference_path().to(X.dtype)
    X = _check_paths(X, xstar)
    total = torch.zeros(X.shape[1], dtype=X.dtype, device=X.device)
    for k in range(X.shape[0]):
        total = (
            total
            + scenario.population_loss(k, X[k])
            - scenario.population_loss(k, xstar[k : k + 1])
        )
    return total
