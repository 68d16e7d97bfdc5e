"""Lazy imports of optional dependencies, with errors that name the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


def require(
    module: str, extra: str, *, package: str = "icml26-core", install: str | None = None
) -> ModuleType:
    """Import ``module`` or raise an error that says which extra provides it.

    Args:
        module: Dotted module name, e.g. ``"sklearn.datasets"``.
        extra: Name of the extra that installs it, e.g. ``"data"``.
        package: Distribution that declares the extra.
        install: The command to give instead of ``pip install 'package[extra]'`` (for
            carriers that are installed apart, e.g. with ``--no-deps``).

    Returns:
        The imported module.

    Raises:
        MissingExtraError: If the module cannot be imported.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        how = install or f"pip install '{package}[{extra}]'"
        raise MissingExtraError(
            f"{module!r} is needed here but is not installed; install it with: {how}"
        ) from exc
