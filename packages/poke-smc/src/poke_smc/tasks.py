"""Tasks with exact answers that a small masked diffusion LM can learn on a CPU.

Every task is a fixed-length character sequence over a small alphabet; the mask token
is ``len(alphabet)``. A task gives training batches (clean sequences and which
positions may be masked), an evaluation set (inputs with masks where the answer goes,
and the targets) and an exact-answer check.

- :class:`SudokuTask`: the grid as ``n*n`` digits; training masks random cells of random
  solved grids, evaluation fills the empty cells of easy puzzles with unique solutions.
- :class:`AdditionTask`: ``"0123+4567=04690"``; training masks only the answer (as in
  LLaDA's supervised fine-tuning), evaluation generates the answer after the prompt.
- :class:`ShakespeareInfill`: 64-character windows of the plays (the core's
  ``shakespeare`` corpus); training masks random characters, evaluation infills a
  masked span (a whole word of ``span`` letters with ``whole_words=True``) of a
  held-out play, scored by exact match.
"""

from __future__ import annotations

import string
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
from icml26_core.validation import check_int

from poke_smc.sudoku import make_puzzle, random_grids

__all__ = ["AdditionTask", "EvalSet", "ShakespeareInfill", "SudokuTask", "Task"]


@dataclass
class EvalSet:
    """Evaluation items of a task.

    Attributes:
        inputs: int64 ``(N, L)``: the targets with the mask token where the model answers.
        targets: int64 ``(N, L)``: the full correct sequences.
        prompt_len: For prefix tasks, the length of the fully observed prompt (the
            answer is ``inputs[:, prompt_len:]``); None for infilling tasks.
    """

    inputs: np.ndarray
    targets: np.ndarray
    prompt_len: int | None = None

    def __len__(self) -> int:
        return int(self.inputs.shape[0])

    @property
    def masks_per_item(self) -> int:
        """Masked positions per item (the same for every item of our tasks)."""
        return int(self.answer_mask.sum(1).min())

    @property
    def answer_mask(self) -> np.ndarray:
        """Bool ``(N, L)``: the positions the model must fill."""
        return self.inputs != self.targets


class Task(ABC):
    """A character-level task; see the module docstring.

    Attributes:
        name: Short name used in tables and cache keys.
        alphabet: The characters; token id = index in this string.
        seq_len: Length of every sequence.
    """

    name: str
    alphabet: str
    seq_len: int

    @property
    def vocab_size(self) -> int:
        """Number of real tokens (the alphabet)."""
        return len(self.alphabet)

    @property
    def mask_token_id(self) -> int:
        """The mask token's id, ``vocab_size`` (an input-only token)."""
        return len(self.alphabet)

    def encode(self, text: str) -> np.ndarray:
        """int64 ids of ``text`` (characters outside the alphabet raise ``ValueError``)."""
        index = {ch: i for i, ch in enumerate(self.alphabet)}
        try:
            return np.array([index[ch] for ch in text], dtype=np.int64)
        except KeyError as err:
            raise ValueError(
                f"character {err.args[0]!r} is not in {self.name}'s alphabet"
            ) from None

    def decode(self, ids: np.ndarray) -> str:
        """Text of ``ids``; the mask token shows as ``"_"``."""
        return "".join(
            self.alphabet[i] if 0 <= i < self.vocab_size else "_" for i in np.asarray(ids).tolist()
        )

    @abstractmethod
    def train_batch(
        self, batch_size: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Clean sequences int64 ``(B, L)`` and bool ``(B, L)`` positions that may be masked."""

    @abstractmethod
    def eval_set(self, n: int, rng: np.random.Generator) -> EvalSet:
        """``n`` evaluation items."""

    def correct(self, outputs: np.ndarray, items: EvalSet) -> np.ndarray:
        """Bool ``(N,)``: whether each decoded sequence ``(N, L)`` is exactly right."""
        return (np.asarray(outputs) == items.targets).all(axis=1)

    def char_accuracy(self, outputs: np.ndarray, items: EvalSet) -> np.ndarray:
        """Float ``(N,)``: share of the answer positions decoded right."""
        m = items.answer_mask
        return ((np.asarray(outputs) == items.targets) & m).sum(1) / m.sum(1)


class SudokuTask(Task):
    """Sudoku as infilling: the ``n*n`` grid, digits ``1..n``, empty cells masked.

    Args:
        size: 4 or 9.
        blanks: Empty cells per evaluation puzzle (naked-singles-solvable, unique).

    Raises:
        ValueError: On another size or ``blanks`` outside ``[1, size**2)``.
    """

    def __init__(self, size: int = 4, blanks: int | None = None) -> None:
        if size not in (4, 9):
            raise ValueError(f"size must be 4 or 9, got {size!r}")
        self.size = size
        self.blanks = blanks if blanks is not None else (10 if size == 4 else 45)
        check_int("blanks", self.blanks, low=1, high=size * size - 1)
        self.name = f"sudoku {size}x{size}"
        self.alphabet = "123456789"[:size]
        self.seq_len = size * size

    def train_batch(
        self, batch_size: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Random solved grids; every cell may be masked."""
        grids = random_grids(batch_size, self.size, rng).reshape(batch_size, -1)
        return grids, np.ones_like(grids, dtype=bool)

    def eval_set(self, n: int, rng: np.random.Generator) -> EvalSet:
        """``n`` easy puzzles with ``blanks`` empty cells and their unique solutions."""
        inputs, targets = [], []
        while len(inputs) < n:
            sol = random_grids(1, self.size, rng)[0]
            puzzle = make_puzzle(sol, self.blanks, rng)
            if puzzle is None:
                continue
            targets.append(sol.reshape(-1))
            inputs.append(np.where(puzzle.reshape(-1) < 0, self.mask_token_id, sol.reshape(-1)))
        return EvalSet(np.stack(inputs), np.stack(targets))


class AdditionTask(Task):
    """Multi-digit addition: ``"a+b=c"`` with zero-padded ``digits``-digit operands.

    The prompt is ``"a+b="`` (``2 * digits + 2`` characters), the answer the
    ``digits + 1``-digit sum, most significant digit first: decoding it right to left,
    carries first, is one of the orders a strategy may find.

    Raises:
        ValueError: If ``digits`` is not in ``[1, 9]``.
    """

    def __init__(self, digits: int = 4) -> None:
        check_int("digits", digits, low=1, high=9)
        self.digits = digits
        self.name = f"addition {digits}-digit"
        self.alphabet = "0123456789+="
        self.prompt_len = 2 * digits + 2
        self.seq_len = self.prompt_len + digits + 1

    def _sequences(self, batch: int, rng: np.random.Generator) -> np.ndarray:
        hi = 10**self.digits
        a = rng.integers(0, hi, batch)
        b = rng.integers(0, hi, batch)
        d = self.digits
        text = [f"{x:0{d}d}+{y:0{d}d}={x + y:0{d + 1}d}" for x, y in zip(a, b, strict=True)]
        return np.stack([self.encode(t) for t in text])

    def train_batch(
        self, batch_size: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Random sums; only the answer may be masked."""
        x = self._sequences(batch_size, rng)
        maskable = np.zeros_like(x, dtype=bool)
        maskable[:, self.prompt_len :] = True
        return x, maskable

    def eval_set(self, n: int, rng: np.random.Generator) -> EvalSet:
        """``n`` random sums with the answer masked."""
        targets = self._sequences(n, rng)
        inputs = targets.copy()
        inputs[:, self.prompt_len :] = self.mask_token_id
        return EvalSet(inputs, targets, prompt_len=self.prompt_len)


class ShakespeareInfill(Task):
    """Infilling Shakespeare: a masked span of ``span`` characters in a ``window``.

    Text is the core's ``shakespeare`` corpus (38 plays, split by play), restricted to
    printable ASCII (other characters become spaces). Training windows come from the
    training plays, evaluation windows from the held-out plays, with the span at least
    8 characters from either end. With ``whole_words=True`` the span is exactly one
    word of ``span`` letters (a non-letter on each side: "that", "thou", "king"), so an
    exact match means the word was recovered; otherwise it is any ``span`` characters
    starting at a word.

    Args:
        window: Characters per sequence.
        span: Characters masked per evaluation item.
        whole_words: Mask whole words of exactly ``span`` letters.

    Raises:
        ValueError: If the span does not fit in the window with 8 characters each side.
    """

    def __init__(self, window: int = 64, span: int = 6, whole_words: bool = False) -> None:
        check_int("window", window, low=1)
        check_int("span", span, low=1)
        if window < span + 16:
            raise ValueError(f"need window >= span + 16, got {window=}, {span=}")
        self.window, self.span, self.whole_words = window, span, bool(whole_words)
        self.name = "shakespeare words" if whole_words else "shakespeare infilling"
        self.alphabet = "\n" + "".join(ch for ch in string.printable if ch.isprintable())
        self.seq_len = window
        self._text: dict[str, np.ndarray] = {}

    def _ids(self, split: str) -> np.ndarray:
        if split not in self._text:
            from icml26_core.datasets import load_text

            corpus = load_text("shakespeare")
            docs = corpus.train if split == "train" else corpus.validation
            lut = np.full(256, self.alphabet.index(" "), dtype=np.int64)
            for i, ch in enumerate(self.alphabet):
                lut[ord(ch)] = i
            raw = np.frombuffer("\n\n".join(docs).encode("ascii", "replace"), dtype=np.uint8)
            self._text[split] = lut[raw]
        return self._text[split]

    def train_batch(
        self, batch_size: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Random windows of the training plays; every character may be masked."""
        ids = self._ids("train")
        starts = rng.integers(0, len(ids) - self.window, batch_size)
        x = ids[starts[:, None] + np.arange(self.window)]
        return x, np.ones_like(x, dtype=bool)

    def _span_starts(self, x: np.ndarray) -> list[int]:
        lo, hi = 8, self.window - self.span - 8
        letter = np.isin(x, self._letters)
        if self.whole_words:
            return [
                i
                for i in range(lo, hi + 1)
                if not letter[i - 1] and letter[i : i + self.span].all()
                and not letter[i + self.span]
            ]  # fmt: skip
        space, newline = self.alphabet.index(" "), self.alphabet.index("\n")
        return [
            i
            for i in range(lo, hi + 1)
            if x[i - 1] in (space, newline)
            and x[i] not in (space, newline)
            and not np.isin(x[i : i + self.span], [newline]).any()
        ]

    @property
    def _letters(self) -> np.ndarray:
        return np.array([i for i, ch in enumerate(self.alphabet) if ch.isalpha()])

    def eval_set(self, n: int, rng: np.random.Generator) -> EvalSet:
        """``n`` held-out windows, each with one span masked (see the class docstring)."""
        ids = self._ids("validation")
        inputs, targets = [], []
        while len(inputs) < n:
            s = int(rng.integers(0, len(ids) - self.window))
            x = ids[s : s + self.window]
            starts = self._span_starts(x)
            if not starts:
                continue
            i = starts[int(rng.integers(len(starts)))]
            inp = x.copy()
            inp[i : i + self.span] = self.mask_token_id
            inputs.append(inp)
            targets.append(x.copy())
        return EvalSet(np.stack(inputs), np.stack(targets))
