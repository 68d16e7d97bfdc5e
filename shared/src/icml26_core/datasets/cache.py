"""Cache folder for derived arrays (cleaned text, token ids, graphs built from files).

The folder is ``$ICML26_CACHE`` when that variable is set, otherwise the user cache
directory as platformdirs gives it (``$XDG_CACHE_HOME/icml26`` or ``~/.cache/icml26`` on Linux,
``~/Library/Caches/icml26`` on macOS, ``%LOCALAPPDATA%/icml26/Cache`` on Windows).
Everything in it can be deleted at any time: it is rebuilt from the installed packages.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

__all__ = ["cache_dir", "cached_arrays"]

ENV_VAR = "ICML26_CACHE"


def _default_root() -> Path:
    from platformdirs import user_cache_dir

    # appauthor=False: no vendor folder on Windows (%LOCALAPPDATA%/icml26/Cache)
    return Path(user_cache_dir("icml26", appauthor=False))


def cache_dir(*parts: str) -> Path:
    """Return (and create) a folder inside the icml26 cache.

    Args:
        *parts: Sub-folder names, e.g. ``cache_dir("datasets", "text")``.

    Returns:
        The absolute path of the folder, which exists on return.

    Example:
        >>> folder = cache_dir("datasets")
        >>> folder.is_dir()
        True
    """
    root = os.environ.get(ENV_VAR)
    path = Path(root).expanduser() if root else _default_root()
    path = path.joinpath(*parts).absolute()
    path.mkdir(parents=True, exist_ok=True)
    return path


def _safe_name(key: str) -> str:
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)[:80]
    return f"{stem}-{digest}.npz"


def cached_arrays(
    key: str, build: Callable[[], dict[str, np.ndarray]], *, folder: str = "datasets"
) -> dict[str, np.ndarray]:
    """Load named arrays from the cache, or build and store them on first use.

    The file is written atomically (temporary file, then rename), so concurrent
    processes (pytest-xdist workers) never read a half-written cache entry.

    Args:
        key: Identifies the content; include every input that changes it (data
            version, Python version, tokenizer name, ...).
        build: Called on a cache miss; returns a dict of numpy arrays (object
            arrays are not allowed, so the cache never unpickles).
        folder: Sub-folder of the cache.

    Returns:
        Dict of the arrays, as ``build`` returned them (dtype and shape preserved).
    """
    path = cache_dir(folder) / _safe_name(key)
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as data:
                return {k: data[k] for k in data.files}
        except (OSError, ValueError, EOFError):
            path.unlink(missing_ok=True)  # corrupt entry: rebuild below
    arrays = build()
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub misreads **kw
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return arrays
