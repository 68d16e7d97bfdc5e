"""Device and dtype selection, with CUDA when present.

torch is imported inside the functions, so that ``import icml26_core`` works
without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from icml26_core._lazy import require

DEVICE_CHOICES = ("auto", "cpu", "cuda")


def cuda_available() -> bool:
    """Return whether torch is installed and sees at least one CUDA device."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_device(device: str | Any = "auto") -> str:
    """Turn a device request into a concrete device string.

    Args:
        device: ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"``,
            ``"cuda:N"``, or a ``torch.device``.

    Returns:
        A device string such as ``"cpu"`` or ``"cuda:0"``.

    Raises:
        ValueError: If ``device`` is not one of the accepted forms, or CUDA is
            requested but not available.
    """
    text = str(device)
    if text == "auto":
        return "cuda" if cuda_available() else "cpu"
    if text == "cpu":
        return "cpu"
    if text == "cuda" or text.startswith("cuda:"):
        if not cuda_available():
            raise ValueError(f"device={text!r} was requested but no CUDA device is available")
        return text
    raise ValueError(f"device must be one of {DEVICE_CHOICES} or 'cuda:N', got {device!r}")


def torch_device(device: str | Any = "auto") -> Any:
    """Return a ``torch.device`` for ``device`` (see :func:`resolve_device`)."""
    torch = require("torch", "torch")
    return torch.device(resolve_device(device))


def default_dtype(device: str | Any = "auto", *, prefer_bf16: bool = False) -> Any:
    """Return float32, or bfloat16 on a CUDA device that supports it when asked."""
    torch = require("torch", "torch")
    dev = torch_device(device)
    if prefer_bf16 and dev.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def synchronize(device: str | Any = "auto") -> None:
    """Wait for queued CUDA work on ``device``; a no-op on CPU or without torch."""
    if str(device).startswith("cpu"):
        return
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        dev = torch.device(resolve_device(device))
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)


def peak_memory_bytes(device: str | Any = "auto", *, reset: bool = False) -> int | None:
    """Peak CUDA memory allocated on ``device`` in bytes, or None on CPU."""
    try:
        import torch
    except ImportError:
        return None
    dev = resolve_device(device)
    if not dev.startswith("cuda"):
        return None
    peak = int(torch.cuda.max_memory_allocated(dev))
    if reset:
        torch.cuda.reset_peak_memory_stats(dev)
    return peak


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run a block with ``n`` torch intra-op threads, restoring the previous count after.

    Small models on a busy CPU run far slower with several intra-op threads than
    with one (threads spin and synchronize more than they compute), so experiments
    and tests of tiny networks use ``torch_threads(1)``. ``None`` leaves it unchanged.

    Raises:
        ValueError: If ``n`` is not None or a positive integer.
    """
    if n is None:
        yield
        return
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer or None, got {n!r}")
    torch = require("torch", "torch")
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
