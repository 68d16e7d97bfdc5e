"""The LLVM 14 / valgrind toolchain that ECCO compiles and measures with."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache

#: The tools an evaluation runs, by role.
TOOLS = ("clang", "opt", "llc", "llvm-link", "llvm-dis", "valgrind")
INSTALL_HINT = "apt-get install -y clang llvm valgrind"


class ToolchainError(RuntimeError):
    """A tool that the evaluation needs is missing or is not LLVM 14."""


@dataclass(frozen=True)
class Toolchain:
    """Paths of the tools, found on ``PATH`` by :meth:`check`.

    Attributes:
        clang, opt, llc, llvm_link, llvm_dis, valgrind: absolute paths.
        llvm_major: the major version of ``opt`` (the pass list is for 14).
        llvm_mca: path of ``llvm-mca`` or None (only the secondary static estimate).
    """

    clang: str
    opt: str
    llc: str
    llvm_link: str
    llvm_dis: str
    valgrind: str
    llvm_major: int
    llvm_mca: str | None = None

    @classmethod
    def check(cls, *, require_llvm: int | None = 14) -> Toolchain:
        """Find every tool on ``PATH`` (the ``-14`` suffixed names too).

        Args:
            require_llvm: major LLVM version the pass list needs; None accepts any.

        Returns:
            The toolchain.

        Raises:
            ToolchainError: naming every missing tool and the command that installs
                them (``apt-get install -y clang llvm valgrind``), or the wrong version.
        """
        return _check(require_llvm)


def _which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(f"{name}-14")


@lru_cache(maxsize=4)
def _check(require_llvm: int | None) -> Toolchain:
    found = {t: _which(t) for t in TOOLS}
    missing = [t for t, p in found.items() if p is None]
    if missing:
        raise ToolchainError(
            f"ecco-autotune needs {', '.join(missing)} on PATH (missing); "
            f"install them with `{INSTALL_HINT}` (Debian 12 ships LLVM 14)"
        )
    out = subprocess.run([found["opt"], "--version"], capture_output=True, text=True).stdout
    m = re.search(r"LLVM version (\d+)", out)
    major = int(m.group(1)) if m else -1
    if require_llvm is not None and major != require_llvm:
        raise ToolchainError(
            f"ecco-autotune's pass list is for LLVM {require_llvm}'s legacy pass manager; "
            f"found opt of LLVM {major} at {found['opt']} (`{INSTALL_HINT}` on Debian 12)"
        )
    return Toolchain(
        clang=found["clang"],  # type: ignore[arg-type]
        opt=found["opt"],  # type: ignore[arg-type]
        llc=found["llc"],  # type: ignore[arg-type]
        llvm_link=found["llvm-link"],  # type: ignore[arg-type]
        llvm_dis=found["llvm-dis"],  # type: ignore[arg-type]
        valgrind=found["valgrind"],  # type: ignore[arg-type]
        llvm_major=major,
        llvm_mca=_which("llvm-mca"),
    )
