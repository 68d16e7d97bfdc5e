"""Held-out text of three domains for the experiment: general, code and math.

- ``general``: the Wikipedia extract of :func:`icml26_core.datasets.load_text`.
- ``code``: Python source of the standard library of the running interpreter
  (top-level modules, sorted by name; every 10th file is held out), real code that
  ships with every Python install.
- ``math``: arithmetic word problems with worked answers that we *generate* from
  templates with a seeded random generator (no math corpus ships in a registry
  package); train and validation use different seeds.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

import numpy as np

__all__ = ["DOMAINS", "domain_text", "math_problems"]

DOMAINS = ("general", "code", "math")

_NAMES = ["Ada", "Ben", "Chloe", "Dev", "Emma", "Farid", "Grace", "Hugo", "Iris", "Jon"]
_ITEMS = ["apples", "books", "coins", "marbles", "pencils", "stamps", "cards", "shells"]


def math_problems(n: int, seed: int) -> list[str]:
    """``n`` generated arithmetic word problems, each with a worked answer.

    Args:
        n: Number of problems.
        seed: Seed of the generator (train and validation use different seeds).

    Returns:
        List of problem strings ending in ``"The answer is <number>."``.
    """
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        name, other = rng.choice(_NAMES, size=2, replace=False)
        item = rng.choice(_ITEMS)
        a, b, c = (int(v) for v in rng.integers(2, 60, size=3))
        form = int(rng.integers(4))
        if form == 0:
            text = (
                f"{name} has {a} {item}. {other} gives {name} {b} more {item}. "
                f"How many {item} does {name} have now? {a} + {b} = {a + b}. "
                f"The answer is {a + b}."
            )
        elif form == 1:
            big = a + b
            text = (
                f"{name} had {big} {item} and gave {b} of them to {other}. "
                f"How many {item} are left? {big} - {b} = {a}. The answer is {a}."
            )
        elif form == 2:
            k = int(rng.integers(2, 10))
            text = (
                f"{name} buys {k} boxes with {a} {item} in each box. "
                f"How many {item} does {name} buy? {k} * {a} = {k * a}. "
                f"The answer is {k * a}."
            )
        else:
            total = a + b - min(c, a + b - 1)
            used = min(c, a + b - 1)
            text = (
                f"{name} has {a} {item} and finds {b} more, then loses {used}. "
                f"How many {item} does {name} have? {a} + {b} - {used} = {total}. "
                f"The answer is {total}."
            )
        out.append(text)
    return out


def _stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.glob("*.py") if p.is_file())


def domain_text(domain: str, split: str, max_chars: int) -> str:
    """Plain text of one domain and split, cut to at most ``max_chars`` characters.

    Args:
        domain: One of :data:`DOMAINS`.
        split: ``"train"`` or ``"validation"``.
        max_chars: Upper bound on the length of the returned text.

    Returns:
        The text, documents separated by blank lines.

    Raises:
        ValueError: On an unknown domain or split.
    """
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")
    if split not in ("train", "validation"):
        raise ValueError(f"split must be 'train' or 'validation', got {split!r}")
    if domain == "general":
        from icml26_core.datasets import load_text

        text = load_text("wikipedia").text(split)
    elif domain == "code":
        files = _stdlib_files()
        chosen = [f for i, f in enumerate(files) if (i % 10 == 0) == (split == "validation")]
        parts, size = [], 0
        for f in chosen:
            src = f.read_text(encoding="utf-8", errors="replace")
            parts.append(src)
            size += len(src)
            if size >= max_chars:
                break
        text = "\n\n".join(parts)
    else:
        n = max(1, max_chars // 120)
        text = "\n\n".join(math_problems(n, seed=0 if split == "train" else 1))
    return text[:max_chars]
