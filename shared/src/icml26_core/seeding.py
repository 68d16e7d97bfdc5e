"""One call seeds random, numpy and torch; generator factories for reproducible code."""

from __future__ import annotations

import random

import numpy as np


def seed_everything(seed: int) -> np.random.Generator:
    """Seed Python's ``random``, numpy's legacy global state and torch (if installed).

    Args:
        seed: A nonnegative integer.

    Returns:
        A fresh ``numpy.random.Generator`` seeded with ``seed``; prefer passing it
        explicitly over relying on global state.

    Raises:
        ValueError: If ``seed`` is not a nonnegative integer.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a nonnegative integer, got {seed!r}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002 - seeding legacy global state on purpose
    try:
        import torch
    except ImportError:
        pass
    else:
        torch.manual_seed(seed)
    return np.random.default_rng(seed)


def make_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """Return a numpy Generator from a seed, an existing Generator, or None (fresh entropy)."""
    return np.random.default_rng(seed)


def torch_generator(seed: int, device: str = "cpu"):
    """Return a ``torch.Generator`` on ``device`` seeded with ``seed``."""
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g
