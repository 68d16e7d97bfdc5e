"""Training checkpoints in the icml26 cache: model, optimizer, scheduler, step, history."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from icml26_core._lazy import require
from icml26_core.datasets.cache import cache_dir

__all__ = ["CHECKPOINT_FILE", "checkpoint_dir", "load_checkpoint", "save_checkpoint"]

CHECKPOINT_FILE = "checkpoint.pt"


def checkpoint_dir(name: str) -> Path:
    """The folder ``<cache>/lm/checkpoints/<name>`` (created), for :func:`train_lm`.

    The cache is ``$ICML26_CACHE`` or the user cache folder (see
    :func:`icml26_core.datasets.cache_dir`).

    Raises:
        ValueError: If ``name`` is empty or contains a path separator.
    """
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in {".", ".."}:
        raise ValueError(f"name must be a plain folder name, got {name!r}")
    return cache_dir("lm", "checkpoints", name)


def save_checkpoint(
    folder: str | Path,
    *,
    model: Any,
    optimizer: Any = None,
    scheduler: Any = None,
    step: int = 0,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write ``<folder>/checkpoint.pt`` atomically (temporary file, then rename).

    Args:
        folder: Destination folder (created).
        model: Its ``state_dict`` is saved.
        optimizer: Optional; its ``state_dict`` is saved.
        scheduler: Optional; its ``state_dict`` is saved.
        step: Number of optimizer steps taken.
        extra: Other tensors / plain Python values to keep (e.g. the history and the
            batch generator's state); loadable with ``weights_only=True``.

    Returns:
        The path of the checkpoint file.
    """
    torch = require("torch", "lm")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "step": int(step),
        "extra": extra or {},
    }
    path = folder / CHECKPOINT_FILE
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    os.close(fd)
    try:
        torch.save(state, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_checkpoint(
    folder: str | Path, *, model: Any, optimizer: Any = None, scheduler: Any = None
) -> dict[str, Any]:
    """Restore what :func:`save_checkpoint` wrote into ``model`` (and optimizer, scheduler).

    Args:
        folder: Folder holding ``checkpoint.pt``.
        model: Module with the same architecture; loaded in place.
        optimizer: Optional; loaded in place when the checkpoint has its state.
        scheduler: Optional; loaded in place when the checkpoint has its state.

    Returns:
        ``{"step": int, "extra": dict}``.

    Raises:
        FileNotFoundError: If there is no checkpoint in ``folder``.
    """
    torch = require("torch", "lm")
    path = Path(folder) / CHECKPOINT_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    device = next(iter(model.parameters())).device
    state = torch.load(path, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    if optimizer is not None and state["optimizer"] is not None:
        optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None and state["scheduler"] is not None:
        scheduler.load_state_dict(state["scheduler"])
    return {"step": state["step"], "extra": state["extra"]}
