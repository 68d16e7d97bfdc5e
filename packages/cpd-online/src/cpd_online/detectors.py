"""Prompt-level detectors on the entropy stream: CPD and the perplexity baselines.

Each detector follows scikit-learn's conventions: hyperparameters in ``__init__``,
``fit(benign)`` calibrates the threshold ``threshold_`` so that a share ``fpr`` of the
benign prompts is flagged (unless a threshold is given), ``decision_function(X)`` gives
one score per prompt (larger = more suspicious), ``predict(X)`` the flags, and
``localize(X)`` the alarm and onset positions (0-based indices into each prompt's user
tokens). ``X`` is a list of prompts (user strings or message lists, streamed with the
detector's model) or of precomputed :class:`~cpd_online.stream.StreamResult` streams.

- :class:`CPDClassifier`: CPD Online, the one-sided CUSUM on standardized entropies
  (the paper);
- :class:`PerplexityFilter`: mean surprisal of the user tokens (log-perplexity), the
  global filter of Jain et al. (2023);
- :class:`WindowedPerplexity`: the largest mean surprisal over windows of ``window``
  user tokens (Jain et al. 2023's windowed filter);
- :class:`GuardGate`: a cheap detector in front of an expensive guard.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from cpd_online.cusum import cusum_path, robust_baseline
from cpd_online.stream import EntropyStream, StreamResult

__all__ = ["CPDClassifier", "GuardGate", "PerplexityFilter", "WindowedPerplexity"]


class _StreamDetector(BaseEstimator):
    """Shared plumbing: streaming, threshold calibration, flags."""

    model: Any
    tokenizer: Any
    threshold: float | None
    fpr: float
    batch_size: int

    def _streams(self, X: Sequence[Any]) -> list[StreamResult]:
        if isinstance(X, str | StreamResult) or not isinstance(X, Sequence):
            raise TypeError("X must be a list of prompts or of StreamResult streams")
        if len(X) == 0:
            raise ValueError("X is empty")
        if all(isinstance(x, StreamResult) for x in X):
            return list(X)
        if self.model is None or self.tokenizer is None:
            raise ValueError(
                "X holds prompts but the detector has no model/tokenizer; pass "
                "StreamResult streams (EntropyStream.stream_batch) or give model and tokenizer"
            )
        return EntropyStream(self.model, self.tokenizer, batch_size=self.batch_size).stream_batch(X)

    def _score(self, s: StreamResult) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def _locate(self, s: StreamResult, threshold: float) -> tuple[int | None, int | None]:
        raise NotImplementedError  # pragma: no cover - abstract

    def fit(self, benign: Sequence[Any], y: Any = None) -> _StreamDetector:
        """Calibrate ``threshold_`` on benign prompts: flag a share ``fpr`` of them.

        ``threshold_`` is the ``(1 - fpr)`` quantile of the benign scores (the
        "higher" order statistic), so at most a share ``fpr`` scores above it. A
        threshold given in ``__init__`` is used as it is.

        Args:
            benign: Benign prompts or streams, at least one.
            y: Ignored (scikit-learn signature).

        Returns:
            ``self``.
        """
        fpr = check_float("fpr", self.fpr, low=0.0, high=1.0, low_inclusive=False)
        scores = self.decision_function(benign)
        self.benign_scores_ = scores
        if self.threshold is not None:
            self.threshold_ = check_float("threshold", self.threshold)
        else:
            self.threshold_ = float(np.quantile(scores, 1.0 - fpr, method="higher"))
        return self

    def decision_function(self, X: Sequence[Any]) -> np.ndarray:
        """Score of each prompt, float64, shape ``(n,)``; larger is more suspicious."""
        return np.array([self._score(s) for s in self._streams(X)], dtype=np.float64)

    def _threshold(self) -> float:
        if not hasattr(self, "threshold_"):
            if self.threshold is not None:
                return check_float("threshold", self.threshold)
            raise NotFittedError(f"{type(self).__name__} is not fitted: call fit(benign) first")
        return self.threshold_

    def predict(self, X: Sequence[Any]) -> np.ndarray:
        """Flags, bool ``(n,)``: score > ``threshold_``."""
        return self.decision_function(X) > self._threshold()

    def localize(self, X: Sequence[Any]) -> list[tuple[int | None, int | None]]:
        """``(alarm, onset)`` per prompt, 0-based user-token indices (None: no alarm)."""
        thr = self._threshold()
        return [self._locate(s, thr) for s in self._streams(X)]


class CPDClassifier(_StreamDetector):
    """CPD Online: one-sided CUSUM on system-baseline-standardized entropies.

    For each prompt, ``mu0, sigma0`` = median and ``1.4826 * MAD`` of its
    system-prompt entropies (:func:`~cpd_online.cusum.robust_baseline`),
    ``z_t = (H_t - mu0) / sigma0`` over its user tokens, ``S_t = max(0, S_{t-1} + z_t
    - k)``; score ``max_t S_t``; flag if the score exceeds ``h`` (the CUSUM's
    threshold, calibrated by :meth:`fit` when None).

    Args:
        model: Causal LM for :class:`~cpd_online.stream.EntropyStream`, or None when
            only precomputed streams are passed.
        tokenizer: Its fast tokenizer with a chat template, or None.
        k: CUSUM reference value, ``>= 0`` (0: the paper's canonical setting).
        h: CUSUM threshold, ``> 0``, or None to calibrate it on benign prompts.
        fpr: Benign false-positive rate that :meth:`fit` calibrates ``h`` to.
        robust: Median/MAD baseline (default) or mean/std.
        batch_size: Prompts per forward pass when streaming.

    Attributes:
        threshold_: The ``h`` in use after :meth:`fit`.
        benign_scores_: Scores of the benign prompts given to :meth:`fit`.

    Raises:
        ValueError: (at use) ``k < 0``, ``h <= 0``, ``fpr`` outside (0, 1].

    References:
        CPD Online, ICML 2026 (``shared/papers/cpd-online.md``); Page (1954).
    """

    def __init__(
        self,
        model: Any = None,
        tokenizer: Any = None,
        k: float = 0.0,
        h: float | None = None,
        *,
        fpr: float = 0.05,
        robust: bool = True,
        batch_size: int = 8,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.k = k
        self.h = h
        self.fpr = fpr
        self.robust = robust
        self.batch_size = batch_size

    @property
    def threshold(self) -> float | None:  # the CUSUM's own name for it is h
        """The given ``h`` (None: calibrate)."""
        if self.h is not None:
            return check_float("h", self.h, low=0.0, low_inclusive=False)
        return None

    def standardized(self, s: StreamResult) -> np.ndarray:
        """``z_t`` over the user tokens of one stream, float64 ``(n_user,)``."""
        mu0, sigma0 = robust_baseline(s.system_entropies, robust=self.robust)
        return (s.user_entropies - mu0) / sigma0

    def _score(self, s: StreamResult) -> float:
        return cusum_path(self.standardized(s), check_float("k", self.k, low=0.0)).score

    def _locate(self, s: StreamResult, threshold: float) -> tuple[int | None, int | None]:
        path = cusum_path(self.standardized(s), self.k, max(threshold, 1e-12))
        return path.alarm, path.onset


class PerplexityFilter(_StreamDetector):
    """Global perplexity filter: score = mean surprisal of the user tokens (nats).

    ``exp(score)`` is the user text's perplexity under the model. It flags a prompt
    but cannot say where the suffix starts (:meth:`localize` gives ``(None, None)``
    unless flagged, then ``(last token, 0)``).

    Args:
        model, tokenizer: As :class:`CPDClassifier`.
        threshold: Log-perplexity threshold, or None to calibrate on benign prompts.
        fpr: Benign false-positive rate for calibration.
        batch_size: Prompts per forward pass.

    References:
        Jain et al. (2023), Baseline Defenses for Adversarial Attacks Against Aligned
        Language Models, section 4.1; Alon & Kamfonas (2023).
    """

    def __init__(
        self,
        model: Any = None,
        tokenizer: Any = None,
        threshold: float | None = None,
        *,
        fpr: float = 0.05,
        batch_size: int = 8,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.threshold = threshold
        self.fpr = fpr
        self.batch_size = batch_size

    def _score(self, s: StreamResult) -> float:
        return float(np.mean(s.user_surprisal))

    def _locate(self, s: StreamResult, threshold: float) -> tuple[int | None, int | None]:
        if self._score(s) > threshold:
            return int(s.user_mask.sum()) - 1, 0
        return None, None


class WindowedPerplexity(_StreamDetector):
    """Windowed perplexity filter: score = largest mean surprisal over ``window`` tokens.

    Windows slide one token at a time over the user tokens; a prompt shorter than the
    window is one window. Online reading: the alarm is the last token of the first
    window whose mean exceeds the threshold, the onset that window's first token.

    Args:
        model, tokenizer: As :class:`CPDClassifier`.
        window: Window length in tokens, ``>= 1``.
        threshold: Log-perplexity threshold, or None to calibrate on benign prompts.
        fpr: Benign false-positive rate for calibration.
        batch_size: Prompts per forward pass.

    References:
        Jain et al. (2023), section 4.1 (windowed perplexity).
    """

    def __init__(
        self,
        model: Any = None,
        tokenizer: Any = None,
        window: int = 10,
        threshold: float | None = None,
        *,
        fpr: float = 0.05,
        batch_size: int = 8,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.window = window
        self.threshold = threshold
        self.fpr = fpr
        self.batch_size = batch_size

    def window_means(self, s: StreamResult) -> np.ndarray:
        """Mean surprisal of each window (indexed by its first token), ``(n_windows,)``."""
        w = check_int("window", self.window, low=1)
        x = s.user_surprisal
        if x.size <= w:
            return np.array([x.mean()])
        c = np.concatenate([[0.0], np.cumsum(x)])
        return (c[w:] - c[:-w]) / w

    def _score(self, s: StreamResult) -> float:
        return float(self.window_means(s).max())

    def _locate(self, s: StreamResult, threshold: float) -> tuple[int | None, int | None]:
        above = np.flatnonzero(self.window_means(s) > threshold)
        if not above.size:
            return None, None
        start = int(above[0])
        n = int(s.user_mask.sum())
        return min(start + int(self.window) - 1, n - 1), start


class GuardGate:
    """A cheap detector in front of an expensive guard: low scores skip the guard.

    A prompt whose detector score is at most ``clear_below`` is passed as benign
    without calling the guard; every other prompt goes to the guard, whose answer is
    the gate's. The guard-call saving is the share of prompts cleared.

    Args:
        detector: A fitted detector with ``decision_function``.
        guard: Callable from a list of prompts to flags (bool, one per prompt).
        clear_below: Score at or below which a prompt skips the guard.

    Attributes:
        calls_: Number of guard calls in the last :meth:`predict`.
    """

    def __init__(
        self, detector: Any, guard: Callable[[list[Any]], Any], clear_below: float
    ) -> None:
        self.detector = detector
        self.guard = guard
        self.clear_below = check_float("clear_below", clear_below)
        self.calls_ = 0

    def predict(self, X: Sequence[Any], *, prompts: Sequence[Any] | None = None) -> np.ndarray:
        """Flags, bool ``(n,)``.

        Args:
            X: What the detector scores (prompts or streams).
            prompts: What the guard reads, when ``X`` holds streams (default ``X``);
                one per entry of ``X``, in the same order.

        Raises:
            ValueError: If ``prompts`` and ``X`` differ in length, or the guard does
                not return one flag per prompt sent to it.
        """
        scores = self.detector.decision_function(X)
        src = list(X if prompts is None else prompts)
        if len(src) != len(scores):
            raise ValueError(
                f"prompts must hold one prompt per entry of X: got {len(src)} prompts "
                f"for {len(scores)} entries of X"
            )
        sent = np.flatnonzero(scores > self.clear_below)
        flags = np.zeros(len(src), dtype=bool)
        self.calls_ = int(sent.size)
        if sent.size:
            answer = np.asarray(self.guard([src[i] for i in sent]), dtype=bool).reshape(-1)
            if answer.size != sent.size:
                raise ValueError(
                    f"guard must return one flag per prompt it is given: it got "
                    f"{sent.size} prompts and returned {answer.size} flags"
                )
            flags[sent] = answer
        return flags
