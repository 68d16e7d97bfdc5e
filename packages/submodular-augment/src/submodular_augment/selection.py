r"""Robustness gain as a normalized monotone submodular set function, and greedy selection.

**Facility location over evaluation actions.** Given candidate transformations
``T = {t_1, ..., t_m}``, evaluation actions ``G_eval = {g_1, ..., g_q}`` and a
similarity ``sim⁺(g, t) ∈ [0, 1]`` (with the identity ``e`` as the always-present
element, ``sim⁺(g, e) = 1`` if ``g = e`` and 0 otherwise),

.. math::

    c(S) = \frac{1}{q} \sum_{g \in G_{eval}} \max_{s \in S \cup \{e\}} sim^+(g, s),
    \qquad f(S) = \frac{c(S) - c(\emptyset)}{c(T) - c(\emptyset)}.

``f(∅) = 0`` and ``f(T) = 1`` (normalized); ``f`` is monotone (a max over a larger set
is no smaller) and submodular (for ``A ⊆ B`` and ``t ∉ B``, the gain of ``t`` at one
``g`` is ``max(0, sim⁺(g, t) - m_A(g)) ≥ max(0, sim⁺(g, t) - m_B(g))`` since
``m_A(g) ≤ m_B(g)``, where ``m_S(g) = max_{s ∈ S ∪ {e}} sim⁺(g, s)``; summing over
``g`` and dividing by the positive constant keeps both properties).

:class:`FacilityLocationGain` is that function for a given similarity matrix;
:class:`RobustnessGain` builds the matrix from a model: ``sim⁺(g, t)`` is the cosine
similarity, clipped at 0, of the *mean representation shifts*
``δ_g = mean_x [h(g·x) − h(x)]`` over prompts ``x``, where ``h`` is the model's
mean-pooled last hidden state.

**Greedy.** :func:`greedy_select` adds the element of largest marginal gain (lowest
index among ties). With a budget ``k`` it returns ``S_k`` with
``f(S_k) ≥ (1 − 1/e) max_{|S| ≤ k} f(S)`` (Nemhauser, Wolsey, Fisher 1978); with
``epsilon`` it is the greedy submodular cover (Wolsey 1982): the first ``S`` with
``f(S) ≥ 1 − ε``, at most ``(1 + ln(1/ε'))`` times the smallest such set for
integer-valued f, the usual ln-approximation. ``lazy=True`` (Minoux's lazy greedy)
re-evaluates only the top of a heap of stale upper bounds, which submodularity makes
valid; it returns the same set as the plain greedy.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from icml26_core.validation import check_float, check_int

from submodular_augment.transforms import GroupAction, Identity, parse_action

__all__ = [
    "FacilityLocationGain",
    "RobustnessGain",
    "Selection",
    "SetFunction",
    "greedy_select",
    "modular_top_k",
    "representation_shifts",
]


class SetFunction(Protocol):
    """What :func:`greedy_select` needs: a ground set size, values and marginal gains."""

    n: int

    def __call__(self, S: Iterable[int]) -> float: ...  # noqa: D102

    def marginal_gain(self, S: Iterable[int], a: int) -> float: ...  # noqa: D102


class FacilityLocationGain:
    """Normalized facility location ``f(S)`` (module docstring) over a similarity matrix.

    Args:
        similarity: Array (q, m): ``similarity[j, i] = sim⁺(g_j, t_i)``, values in
            [0, 1] (clipped there).
        baseline: Array (q,): ``sim⁺(g_j, e)``, the coverage of the empty set
            (default zeros).
        names: Optional names of the m candidates (for :class:`Selection`).

    Raises:
        TypeError: If ``similarity`` is not numeric.
        ValueError: On a non-2-D or empty matrix, NaN entries, a baseline of the wrong
            length, or names of the wrong length.

    Attributes:
        n: Number of candidates m.
        similarity: The clipped matrix (q, m), float64.
        baseline: Array (q,).
        scale: ``c(T) - c(∅)``; 0 when no candidate adds coverage (then f ≡ 0).
    """

    def __init__(
        self,
        similarity: Any,
        baseline: Any = None,
        names: Sequence[str] | None = None,
    ) -> None:
        try:
            sim = np.asarray(similarity, dtype=float)
        except (TypeError, ValueError) as e:
            raise TypeError(f"similarity must be a real 2-D array, got {similarity!r:.80}") from e
        if sim.ndim != 2 or sim.size == 0:
            raise ValueError(
                f"similarity must be a non-empty 2-D array (n_eval, n_candidates), got shape "
                f"{sim.shape}"
            )
        if not np.all(np.isfinite(sim)):
            raise ValueError("similarity must be finite (no NaN or inf)")
        self.similarity = np.clip(sim, 0.0, 1.0)
        q, m = self.similarity.shape
        base = np.zeros(q) if baseline is None else np.asarray(baseline, dtype=float)
        if base.shape != (q,):
            raise ValueError(f"baseline must have shape ({q},), got {base.shape}")
        self.baseline = np.clip(base, 0.0, 1.0)
        if names is not None and len(names) != m:
            raise ValueError(f"names must have {m} entries, got {len(names)}")
        self.names = tuple(names) if names is not None else tuple(str(i) for i in range(m))
        self.n = m
        self._c0 = float(self.baseline.mean())
        full = np.maximum(self.baseline, self.similarity.max(axis=1))
        self.scale = float(full.mean()) - self._c0

    def _indices(self, S: Iterable[int]) -> list[int]:
        if isinstance(S, (str, bytes)):
            raise TypeError(f"S must be an iterable of candidate indices (ints), got {S!r}")
        idx = sorted({check_int("S", i, low=0, high=self.n - 1) for i in S})
        return idx

    def coverage(self, S: Iterable[int]) -> np.ndarray:
        """``m_S(g_j) = max_{s ∈ S ∪ {e}} sim⁺(g_j, s)`` for each evaluation action, shape (q,)."""
        idx = self._indices(S)
        if not idx:
            return self.baseline.copy()
        return np.maximum(self.baseline, self.similarity[:, idx].max(axis=1))

    def __call__(self, S: Iterable[int]) -> float:
        """``f(S)`` in [0, 1] for a set of candidate indices."""
        if self.scale <= 0:
            return 0.0
        return (float(self.coverage(S).mean()) - self._c0) / self.scale

    def marginal_gain(self, S: Iterable[int], a: int) -> float:
        """``f(S ∪ {a}) − f(S)`` (≥ 0), without recomputing ``f(S ∪ {a})`` from scratch."""
        a = check_int("a", a, low=0, high=self.n - 1)
        if self.scale <= 0:
            return 0.0
        cov = self.coverage(S)
        return float(np.maximum(self.similarity[:, a] - cov, 0.0).mean()) / self.scale

    def _gains_given(self, cov: np.ndarray) -> np.ndarray:
        if self.scale <= 0:
            return np.zeros(self.n)
        return np.maximum(self.similarity - cov[:, None], 0.0).mean(axis=0) / self.scale


def _mean_hidden(model: Any, texts: Sequence[str], encode: Callable[[str], list[int]], bs: int):
    import torch

    device = next(iter(model.parameters())).device
    out = []
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for start in range(0, len(texts), bs):
            chunk = [encode(t) or [0] for t in texts[start : start + bs]]
            width = max(len(c) for c in chunk)
            ids = torch.zeros((len(chunk), width), dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.float32)
            for r, c in enumerate(chunk):
                ids[r, : len(c)] = torch.tensor(c)
                mask[r, : len(c)] = 1.0
            hidden = model(ids.to(device), output_hidden_states=True).hidden_states[-1].float()
            m = mask.to(device)[:, :, None]
            out.append(((hidden * m).sum(1) / m.sum(1)).cpu().numpy())
    model.train(was_training)
    return np.concatenate(out, axis=0)


def _byte_encode(text: str) -> list[int]:
    return list(text.encode("utf-8"))


def representation_shifts(
    model: Any,
    prompts: Sequence[str],
    actions: Sequence[GroupAction | str],
    *,
    encode: Callable[[str], list[int]] | None = None,
    batch_size: int = 64,
) -> np.ndarray:
    """Mean representation shifts ``δ_g = mean_x [h(g·x) − h(x)]``, one row per action.

    Args:
        model: Either a causal LM (a ``torch.nn.Module`` whose forward accepts
            ``output_hidden_states=True``, e.g. transformers' ``LlamaForCausalLM``;
            ``h`` is the mean over positions of the last hidden state), or a callable
            ``embed(list[str]) -> array (n, d)``.
        prompts: The prompts ``x`` (non-empty).
        actions: Actions or action names.
        encode: Text to token ids for an LM (default UTF-8 bytes, for byte models).
        batch_size: Prompts per forward pass.

    Returns:
        float64 array (len(actions), d).

    Raises:
        TypeError: If ``prompts`` is a single str or holds non-strings.
        ValueError: If ``prompts`` or ``actions`` is empty, or an embedder returns an
            array that is not (len(texts), d).
    """
    if isinstance(prompts, str):
        raise TypeError("prompts must be a sequence of strings, got a single str")
    prompts = list(prompts)
    if not prompts:
        raise ValueError("prompts must not be empty")
    if not all(isinstance(x, str) for x in prompts):
        bad = next(x for x in prompts if not isinstance(x, str))
        raise TypeError(f"prompts must hold strings, got {type(bad).__name__}")
    acts = [parse_action(a) for a in actions]
    if not acts:
        raise ValueError("actions must not be empty")
    batch_size = check_int("batch_size", batch_size, low=1)
    if hasattr(model, "parameters") and hasattr(model, "forward"):
        enc = encode or _byte_encode

        def embed(texts: Sequence[str]) -> np.ndarray:
            return _mean_hidden(model, texts, enc, batch_size)
    elif callable(model):
        embed = model  # type: ignore[assignment]
    else:
        raise TypeError(f"model must be a torch LM or a callable embedder, got {type(model)}")
    base = _embedding(embed, prompts)
    return np.stack(
        [(_embedding(embed, [g.apply(x) for x in prompts]) - base).mean(0) for g in acts]
    )


def _embedding(embed: Any, texts: list[str]) -> np.ndarray:
    out = np.asarray(embed(texts), dtype=float)
    if out.ndim != 2 or out.shape[0] != len(texts):
        raise ValueError(
            f"model (an embedder) must return an array of shape (len(texts), d) = "
            f"({len(texts)}, d), got shape {out.shape}"
        )
    return out


def _clipped_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    na = np.linalg.norm(a, axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = (a @ b.T) / (na * nb.T)
    return np.clip(np.nan_to_num(cos, nan=0.0), 0.0, 1.0)


class RobustnessGain(FacilityLocationGain):
    """The robustness gain of augmenting with candidate actions, from a model's representations.

    ``sim⁺(g, t) = max(0, cos(δ_g, δ_t))`` with ``δ`` from :func:`representation_shifts`
    on ``prompts``; an evaluation action equal to a candidate gets similarity 1 with it;
    the identity (shift 0) is covered by the empty set. See the module docstring for f.

    Args:
        model: A causal LM or an embedder (see :func:`representation_shifts`).
        prompts: Prompts the shifts are averaged over (e.g. the harmful prompts of the
            alignment set).
        actions: The candidate set ``T`` (actions or names), distinct.
        eval_actions: The evaluation actions ``G_eval`` (default ``actions``).
        encode: Text to token ids for an LM (default UTF-8 bytes).

    Raises:
        TypeError: If ``prompts`` is a single str or holds non-strings.
        ValueError: On empty prompts, empty or duplicate actions, unknown action names,
            or an embedder output that is not (len(texts), d).

    Example:
        >>> f = RobustnessGain(lambda xs: [[len(x), x.count("a")] for x in xs],
        ...                    ["a cat", "a bat"], ["caesar1", "leet"])
        >>> round(f([]), 3), round(f([0, 1]), 3)
        (0.0, 1.0)
    """

    def __init__(
        self,
        model: Any,
        prompts: Sequence[str],
        actions: Sequence[GroupAction | str],
        eval_actions: Sequence[GroupAction | str] | None = None,
        *,
        encode: Callable[[str], list[int]] | None = None,
    ) -> None:
        acts = [parse_action(a) for a in actions]
        if not acts:
            raise ValueError("actions must not be empty")
        if len({a.name for a in acts}) != len(acts):
            raise ValueError(f"actions must be distinct, got {[a.name for a in acts]}")
        evals = acts if eval_actions is None else [parse_action(a) for a in eval_actions]
        if not evals:
            raise ValueError("eval_actions must not be empty")
        self.actions = tuple(acts)
        self.eval_actions = tuple(evals)
        every = list(dict.fromkeys([*acts, *evals]))
        shifts = representation_shifts(model, prompts, every, encode=encode)
        row = {a.name: i for i, a in enumerate(every)}
        d_eval = shifts[[row[g.name] for g in evals]]
        d_cand = shifts[[row[t.name] for t in acts]]
        sim = _clipped_cosine(d_eval, d_cand)
        for j, g in enumerate(evals):
            for i, t in enumerate(acts):
                if g.name == t.name:
                    sim[j, i] = 1.0
        baseline = np.array([1.0 if isinstance(g, Identity) else 0.0 for g in evals])
        self.shifts = {a.name: shifts[row[a.name]] for a in every}
        super().__init__(sim, baseline, names=[a.name for a in acts])


@dataclass
class Selection:
    """What :func:`greedy_select` chose.

    Attributes:
        indices: Chosen candidate indices, in the order they were added.
        names: Their names (when the set function has ``names``).
        values: ``f`` after each addition (``values[k-1] = f(S_k)``).
        gains: Marginal gain of each addition.
        evaluations: Number of marginal-gain evaluations made.
    """

    indices: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    gains: list[float] = field(default_factory=list)
    evaluations: int = 0

    @property
    def value(self) -> float:
        """``f`` of the chosen set (0 for the empty set)."""
        return self.values[-1] if self.values else 0.0

    def __len__(self) -> int:
        return len(self.indices)


def greedy_select(
    f: SetFunction,
    budget: int | None = None,
    epsilon: float | None = None,
    lazy: bool = True,
) -> Selection:
    """Greedy maximization (with ``budget``) or greedy cover (with ``epsilon``) of ``f``.

    Adds, one at a time, the candidate of largest marginal gain (lowest index among
    ties) and stops when ``budget`` elements are chosen or ``f(S) ≥ 1 − epsilon``,
    whichever comes first; with neither it orders the whole ground set.

    Args:
        f: A monotone submodular set function over ``range(f.n)`` with
            ``marginal_gain(S, a)`` (e.g. :class:`RobustnessGain`); for ``epsilon``,
            normalized so that ``f(ground set) = 1``.
        budget: Largest number of elements, in ``[0, f.n]``.
        epsilon: Cover tolerance, in (0, 1).
        lazy: Minoux's lazy evaluation (same result, fewer evaluations).

    Returns:
        A :class:`Selection`.

    Raises:
        ValueError: If ``budget`` is not in ``[0, f.n]`` or ``epsilon`` not in (0, 1).

    Example:
        >>> f = FacilityLocationGain([[1.0, 0.2, 0.0], [0.0, 0.9, 1.0]])
        >>> greedy_select(f, epsilon=0.01).indices
        [0, 2]
    """
    n = check_int("f.n", getattr(f, "n", None), low=0)
    if budget is not None:
        budget = check_int("budget", budget, low=0, high=n)
    if epsilon is not None:
        epsilon = check_float(
            "epsilon", epsilon, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
        )
    limit = n if budget is None else budget
    names = list(getattr(f, "names", [str(i) for i in range(n)]))
    sel = Selection()
    chosen: list[int] = []
    current = 0.0

    def done() -> bool:
        return len(chosen) >= limit or (epsilon is not None and current >= 1.0 - epsilon - 1e-12)

    def add(a: int, gain: float) -> None:
        nonlocal current
        chosen.append(a)
        current = float(f(chosen))
        sel.indices.append(a)
        sel.names.append(names[a])
        sel.gains.append(gain)
        sel.values.append(current)

    if lazy:
        heap = [(-np.inf, i) for i in range(n)]  # (-upper bound, index)
        heapq.heapify(heap)
        fresh: dict[int, int] = {}  # index -> len(chosen) when its bound was computed
        while heap and not done():
            neg, i = heapq.heappop(heap)
            if fresh.get(i) == len(chosen):
                add(i, -neg)
                continue
            gain = f.marginal_gain(chosen, i)
            sel.evaluations += 1
            fresh[i] = len(chosen)
            heapq.heappush(heap, (-gain, i))
    else:
        remaining = list(range(n))
        while remaining and not done():
            gains = [f.marginal_gain(chosen, i) for i in remaining]
            sel.evaluations += len(remaining)
            k = int(np.argmax(gains))  # first maximum: lowest index among ties
            add(remaining.pop(k), gains[k])
    return sel


def modular_top_k(f: SetFunction, k: int) -> Selection:
    """The modular baseline: the ``k`` candidates of largest individual value ``f({a})``.

    Args:
        f: A set function over ``range(f.n)``.
        k: Number of elements, in ``[0, f.n]``.

    Returns:
        A :class:`Selection` (values are ``f`` of the growing top-k set).
    """
    n = check_int("f.n", getattr(f, "n", None), low=0)
    k = check_int("k", k, low=0, high=n)
    single = np.array([f([i]) for i in range(n)])
    order = sorted(range(n), key=lambda i: (-single[i], i))[:k]
    names = list(getattr(f, "names", [str(i) for i in range(n)]))
    sel = Selection(evaluations=n)
    for j, i in enumerate(order):
        sel.indices.append(i)
        sel.names.append(names[i])
        sel.gains.append(float(single[i]))
        sel.values.append(float(f(order[: j + 1])))
    return sel
