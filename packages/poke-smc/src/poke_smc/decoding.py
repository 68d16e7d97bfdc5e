"""Decoding a masked diffusion LM: unmasking strategies, Path LL and NFE accounting.

A decoder starts from a sequence in which some positions hold the mask token and, in
``steps`` network evaluations, reveals them all: at every step the model gives
log-probabilities ``log p(x_i = v | x_t)`` for every position, a token is chosen for
each masked position, and a *strategy* picks which ``k_t`` of them to reveal (LLaDA's
remasking: the rest stay masked). The number revealed per step follows LLaDA's even
schedule (:func:`reveal_schedule`).

Path log-likelihood (the paper's Path LL) of a trajectory is the sum, over steps, of the
log-probabilities of the tokens revealed at that step given the partial sequence
before it: ``PathLL = sum_t sum_{i revealed at t} log p(x_i | x_t)``. It is computed
for free while decoding (:attr:`DecodeResult.path_ll`) and can be recomputed for any
recorded trajectory with :func:`path_log_likelihood`.

NFE (network function evaluations) counts sequences passed through the network, per
input sequence: ``steps`` for one trajectory, ``n * steps`` for best-of-``n``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from poke_smc._checks import positive_int
from poke_smc.model import model_device

__all__ = [
    "SCORES",
    "BestOfN",
    "DecodeResult",
    "ScoreRemasking",
    "Strategy",
    "decode",
    "infill",
    "log_probs",
    "path_log_likelihood",
    "position_scores",
    "propose",
    "resolve_strategy",
    "reveal_schedule",
]

SCORES = ("random", "confidence", "margin", "entropy")
"""Position scores of the greedy remasking strategies (higher is revealed first)."""


@dataclass
class DecodeResult:
    """A decoded batch and its trajectories.

    Attributes:
        tokens: int64 ``(B, L)``: the final sequences (prompt included for :func:`decode`).
        reveal_step: int64 ``(B, L)``: the step (0-based) at which each position was
            revealed; ``-1`` for positions that were given.
        token_logprob: float32 ``(B, L)``: ``log p`` of each revealed token at its reveal
            step (nats); 0 for given positions.
        path_ll: float32 ``(B,)``: Path LL of each trajectory, ``token_logprob.sum(-1)``.
        nfe: Network function evaluations spent per input sequence.
        steps: Decoding steps (network calls per trajectory).
        candidates: int64 ``(B, N, L)``: every sample's / particle's final sequence for
            best-of-N and SMC (None for a single trajectory).
        candidate_path_ll: float32 ``(B, N)``: their Path LL (None for one trajectory).
        resamples: Resampling events per input sequence (SMC only, else None).
    """

    tokens: torch.Tensor
    reveal_step: torch.Tensor
    token_logprob: torch.Tensor
    path_ll: torch.Tensor
    nfe: int
    steps: int
    candidates: torch.Tensor | None = None
    candidate_path_ll: torch.Tensor | None = None
    resamples: torch.Tensor | None = None


class Strategy(Protocol):
    """An unmasking strategy: decode every masked position of ``tokens`` in ``steps``."""

    def run(
        self,
        model: Any,
        tokens: torch.Tensor,
        steps: int,
        generator: torch.Generator | None = None,
    ) -> DecodeResult:
        """Decode validated int64 ``tokens (B, L)``; every row has at least ``steps`` masks."""
        ...


def log_probs(model: Any, tokens: torch.Tensor) -> torch.Tensor:
    """Float32 log-probabilities ``(B, L, V)`` of ``model`` on ``tokens (B, L)``.

    The mask token (when it is inside the vocabulary) gets probability 0.

    Raises:
        ValueError: If the model's output has the wrong shape or holds NaN.
    """
    logits = model(tokens)
    if logits.ndim != 3 or logits.shape[:2] != tokens.shape:
        raise ValueError(
            f"model returned logits of shape {tuple(logits.shape)} for tokens of shape "
            f"{tuple(tokens.shape)}; expected (batch, length, vocab_size)"
        )
    logits = logits.float()
    mask_id = int(model.mask_token_id)
    if 0 <= mask_id < logits.shape[-1]:
        logits = logits.clone()
        logits[..., mask_id] = float("-inf")
    if torch.isnan(logits).any():
        raise ValueError("model returned NaN logits")
    return torch.log_softmax(logits, dim=-1)


def reveal_schedule(n_masked: torch.Tensor, steps: int) -> torch.Tensor:
    """Tokens to reveal at each step: ``n // steps``, one more in the first ``n % steps``.

    This is LLaDA's schedule for a linear noise schedule: the masked count falls evenly.

    Args:
        n_masked: int ``(B,)``: masked positions per row.
        steps: Number of steps, at most ``n_masked.min()``.

    Returns:
        int64 ``(B, steps)`` whose rows sum to ``n_masked``; every entry is >= 1.
    """
    n = n_masked.long()
    base = torch.div(n, steps, rounding_mode="floor")
    rem = n - base * steps
    ar = torch.arange(steps, device=n.device)
    return base[:, None] + (ar[None, :] < rem[:, None]).long()


def _uniform(shape: Sequence[int], generator: torch.Generator | None, device: Any) -> torch.Tensor:
    dev = generator.device if generator is not None else device
    return torch.rand(tuple(shape), generator=generator, device=dev).to(device)


def _gumbel(shape: Sequence[int], generator: torch.Generator | None, device: Any) -> torch.Tensor:
    u = _uniform(shape, generator, device).clamp_(1e-20, 1.0 - 1e-7)
    return -torch.log(-torch.log(u))


def position_scores(
    logp: torch.Tensor,
    token_logp: torch.Tensor,
    score: str,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """How sure the model is at each position (higher is revealed first).

    Args:
        logp: float ``(B, L, V)`` log-probabilities.
        token_logp: float ``(B, L)``: log-probability of the token chosen at each position.
        score: ``"confidence"`` (the chosen token's probability, LLaDA's low-confidence
            remasking), ``"margin"`` (top-1 minus top-2 probability), ``"entropy"``
            (negative entropy) or ``"random"`` (uniform noise, a random order).
        generator: Random source for ``"random"``.

    Returns:
        float ``(B, L)``.

    Raises:
        ValueError: On an unknown ``score``.
    """
    if score == "confidence":
        return token_logp.exp()
    if score == "margin":
        top = logp.topk(min(2, logp.shape[-1]), dim=-1).values.exp()
        return top[..., 0] - (top[..., 1] if top.shape[-1] > 1 else 0.0)
    if score == "entropy":
        p = logp.exp()
        return (p * logp.clamp_min(-1e30)).nan_to_num(0.0).sum(-1)
    if score == "random":
        return _uniform(token_logp.shape, generator, token_logp.device)
    raise ValueError(f"score must be one of {SCORES}, got {score!r}")


def propose(
    logp: torch.Tensor,
    masked: torch.Tensor,
    k: torch.Tensor,
    *,
    score: str = "confidence",
    temperature: float = 0.0,
    position_temperature: float | None = None,
    generator: torch.Generator | None = None,
    greedy_rows: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One unmasking step: choose a token at every masked position and reveal ``k`` of them.

    With ``temperature == 0`` tokens are the argmax, else they are sampled from
    ``softmax(logp / temperature)``. With ``position_temperature == 0`` the revealed
    positions are the ``k`` best by ``score`` (deterministic greedy remasking), else they
    are drawn by Gumbel-top-k on ``score / position_temperature`` (for ``"confidence"``:
    without replacement with probability proportional to ``p^(1/position_temperature)``),
    so that trajectories explore other unmasking orders.

    Args:
        logp: float ``(B, L, V)`` log-probabilities of the current state.
        masked: bool ``(B, L)``: positions still masked.
        k: int ``(B,)``: how many to reveal in each row (``<= masked.sum(-1)``).
        score: One of :data:`SCORES`.
        temperature: Token sampling temperature, >= 0.
        position_temperature: Temperature of the choice of positions, >= 0; None: the
            same as ``temperature``.
        generator: Random source.
        greedy_rows: Optional bool ``(B,)``: rows that propose greedily (argmax tokens,
            best positions) whatever the temperatures.

    Returns:
        ``(tokens, reveal, token_logp)``: int64 ``(B, L)`` chosen tokens, bool ``(B, L)``
        positions revealed now, and float ``(B, L)`` the model's log-probability (at
        temperature 1) of each chosen token.
    """
    tokens = logp.argmax(-1)
    if temperature > 0:
        sampled = (logp / temperature + _gumbel(logp.shape, generator, logp.device)).argmax(-1)
        tokens = (
            sampled if greedy_rows is None else torch.where(greedy_rows[:, None], tokens, sampled)
        )
    token_logp = logp.gather(-1, tokens[..., None]).squeeze(-1)
    s = position_scores(logp, token_logp, score, generator)
    pos_t = temperature if position_temperature is None else position_temperature
    if pos_t > 0 and score != "random":
        noisy = s / pos_t + _gumbel(s.shape, generator, s.device)
        s = noisy if greedy_rows is None else torch.where(greedy_rows[:, None], s, noisy)
    s = s.masked_fill(~masked, float("-inf"))
    order = s.argsort(dim=-1, descending=True, stable=True)
    rank = torch.empty_like(order)
    rank.scatter_(1, order, torch.arange(s.shape[1], device=s.device).expand_as(order))
    reveal = (rank < k[:, None]) & masked
    return tokens, reveal, token_logp


StepHook = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor], None]


@dataclass
class _Paths:
    """Trajectories being decoded, one per row: the state and what each reveal recorded."""

    x: torch.Tensor  # int64 (N, L) current sequences
    masked: torch.Tensor  # bool (N, L) positions still masked
    reveal_step: torch.Tensor  # int64 (N, L), -1 for given positions
    token_lp: torch.Tensor  # float32 (N, L) log p of each token at its reveal step
    path_ll: torch.Tensor  # float32 (N,) Path LL so far

    @classmethod
    def start(cls, tokens: torch.Tensor, mask_id: int) -> _Paths:
        x = tokens.clone()
        return cls(
            x,
            x == mask_id,
            torch.full_like(x, -1),
            torch.zeros(x.shape, dtype=torch.float32, device=x.device),
            torch.zeros(x.shape[0], dtype=torch.float32, device=x.device),
        )

    def reveal(
        self, new: torch.Tensor, reveal: torch.Tensor, lp: torch.Tensor, t: int
    ) -> torch.Tensor:
        """Write the revealed tokens of step ``t``; return each row's Path LL increment."""
        self.x = torch.where(reveal, new, self.x)
        self.reveal_step = torch.where(reveal, t, self.reveal_step)
        self.token_lp = torch.where(reveal, lp, self.token_lp)
        delta = torch.where(reveal, lp, 0.0).sum(-1)
        self.path_ll = self.path_ll + delta
        self.masked = self.masked & ~reveal
        return delta

    def take(self, rows: torch.Tensor) -> _Paths:
        """The trajectories at ``rows`` (resampling, selection)."""
        return _Paths(
            self.x[rows],
            self.masked[rows],
            self.reveal_step[rows],
            self.token_lp[rows],
            self.path_ll[rows],
        )

    def result(self, steps: int) -> DecodeResult:
        """One trajectory per row: ``steps`` NFE."""
        return DecodeResult(self.x, self.reveal_step, self.token_lp, self.path_ll, steps, steps)

    def best_of_groups(
        self, batch: int, n: int, steps: int, resamples: torch.Tensor | None = None
    ) -> DecodeResult:
        """Rows in groups of ``n`` per input: keep each group's highest Path LL."""
        best = self.path_ll.view(batch, n).argmax(-1)
        kept = self.take(torch.arange(batch, device=best.device) * n + best)
        return DecodeResult(
            tokens=kept.x,
            reveal_step=kept.reveal_step,
            token_logprob=kept.token_lp,
            path_ll=kept.path_ll,
            nfe=n * steps,
            steps=steps,
            candidates=self.x.view(batch, n, -1),
            candidate_path_ll=self.path_ll.view(batch, n),
            resamples=resamples,
        )


def _first_of_each(batch: int, n: int, device: Any) -> torch.Tensor:
    """Bool ``(batch * n,)``: the first row of each group of ``n`` (the greedy candidate)."""
    return torch.arange(batch * n, device=device) % n == 0


def _unmask(
    model: Any,
    tokens: torch.Tensor,
    steps: int,
    *,
    score: str,
    temperature: float,
    generator: torch.Generator | None,
    position_temperature: float | None = None,
    on_step: StepHook | None = None,
    greedy_rows: torch.Tensor | None = None,
) -> _Paths:
    """The greedy / sampled remasking loop shared by the strategies and POKE's rollouts."""
    paths = _Paths.start(tokens, int(model.mask_token_id))
    schedule = reveal_schedule(paths.masked.sum(-1), steps)
    for t in range(steps):
        logp = log_probs(model, paths.x)
        if on_step is not None:
            on_step(t, logp, paths.masked, paths.path_ll)
        new, reveal, lp = propose(
            logp,
            paths.masked,
            schedule[:, t],
            score=score,
            temperature=temperature,
            position_temperature=position_temperature,
            generator=generator,
            greedy_rows=greedy_rows,
        )
        paths.reveal(new, reveal, lp, t)
    return paths


def _check_score_temperature(
    score: str, temperature: float, position_temperature: float | None = None
) -> None:
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")
    if not isinstance(temperature, int | float) or not temperature >= 0:
        raise ValueError(f"temperature must be a number >= 0, got {temperature!r}")
    pt = position_temperature
    if pt is not None and (not isinstance(pt, int | float) or not pt >= 0):
        raise ValueError(f"position_temperature must be None or a number >= 0, got {pt!r}")


def _check_distinct(n: int, name: str, temperature: float, position_temperature: float | None):
    """Several candidates from a deterministic proposal would all be the same trajectory."""
    pt = temperature if position_temperature is None else position_temperature
    if n > 1 and temperature == 0 and pt == 0:
        raise ValueError(
            f"{name}={n} with temperature 0 and position_temperature 0 gives {n} identical "
            "trajectories; set temperature or position_temperature > 0 (or use 1)"
        )


@dataclass(frozen=True)
class ScoreRemasking:
    """Reveal, at every step, the masked positions the model is surest about.

    ``ScoreRemasking("confidence")`` is LLaDA's low-confidence remasking (greedy
    confidence decoding); ``"margin"`` and ``"entropy"`` rank positions by the top-2
    margin or the negative entropy; ``"random"`` reveals positions in a random order
    (MDLM's ancestral sampler with argmax tokens). ``temperature > 0`` samples tokens and
    ``position_temperature > 0`` samples the order (see :func:`propose`).

    Args:
        score: One of :data:`SCORES`.
        temperature: Token sampling temperature, >= 0 (0: argmax).
        position_temperature: Order sampling temperature, >= 0 (0: greedy order); None:
            the same as ``temperature``.

    Raises:
        ValueError: On an unknown score or a negative temperature.
    """

    score: str = "confidence"
    temperature: float = 0.0
    position_temperature: float | None = None

    def __post_init__(self) -> None:
        _check_score_temperature(self.score, self.temperature, self.position_temperature)

    def run(
        self,
        model: Any,
        tokens: torch.Tensor,
        steps: int,
        generator: torch.Generator | None = None,
    ) -> DecodeResult:
        """Decode ``tokens (B, L)`` in ``steps`` steps; ``nfe == steps``."""
        paths = _unmask(
            model,
            tokens,
            steps,
            score=self.score,
            temperature=self.temperature,
            position_temperature=self.position_temperature,
            generator=generator,
        )
        return paths.result(steps)


@dataclass(frozen=True)
class BestOfN:
    """Best-of-N by Path LL: ``n`` sampled trajectories, keep the one with the highest Path LL.

    The decoding-time scaling baseline of the paper: independent trajectories from
    :class:`ScoreRemasking` at ``temperature``, all in one batch, selected by Path LL.
    Costs ``n * steps`` NFE.

    Args:
        n: Number of trajectories (>= 1).
        score: Position score of the sampled trajectories (one of :data:`SCORES`).
        temperature: Token sampling temperature.
        position_temperature: Order sampling temperature; None: ``temperature``. One of
            the two must be > 0 for distinct trajectories.
        greedy_first: Make the first of the ``n`` trajectories the greedy one
            (temperature 0), so that the selection can only improve on greedy decoding's
            Path LL.

    Raises:
        ValueError: On ``n < 1``, an unknown score, a negative temperature, or ``n > 1``
            with both temperatures 0 (identical trajectories).
    """

    n: int = 8
    score: str = "confidence"
    temperature: float = 1.0
    position_temperature: float | None = None
    greedy_first: bool = False

    def __post_init__(self) -> None:
        positive_int("n", self.n)
        _check_score_temperature(self.score, self.temperature, self.position_temperature)
        _check_distinct(self.n, "n", self.temperature, self.position_temperature)

    def run(
        self,
        model: Any,
        tokens: torch.Tensor,
        steps: int,
        generator: torch.Generator | None = None,
    ) -> DecodeResult:
        """Decode ``n`` trajectories per row of ``tokens (B, L)``; ``nfe == n * steps``."""
        batch, n = tokens.shape[0], self.n
        greedy_rows = _first_of_each(batch, n, tokens.device) if self.greedy_first else None
        paths = _unmask(
            model,
            tokens.repeat_interleave(n, 0),
            steps,
            score=self.score,
            temperature=self.temperature,
            position_temperature=self.position_temperature,
            generator=generator,
            greedy_rows=greedy_rows,
        )
        return paths.best_of_groups(batch, n, steps)


def resolve_strategy(strategy: str | Strategy) -> Strategy:
    """A :class:`Strategy` from a name (``"confidence"``, ..., ``"best-of-n"``) or object.

    Raises:
        ValueError: On an unknown name.
        TypeError: If ``strategy`` is neither a name nor has a ``run`` method.
    """
    if isinstance(strategy, str):
        if strategy in SCORES:
            return ScoreRemasking(strategy)
        if strategy in ("best-of-n", "best_of_n"):
            return BestOfN()
        raise ValueError(
            f"strategy must be one of {(*SCORES, 'best-of-n')} or a strategy object "
            f"(ScoreRemasking, BestOfN, PokeSMC), got {strategy!r}"
        )
    if not callable(getattr(strategy, "run", None)):
        raise TypeError(f"strategy must be a name or have a run() method, got {strategy!r}")
    return strategy


def _as_tokens(value: Any, name: str, device: torch.device) -> torch.Tensor:
    t = torch.as_tensor(value, device=device)
    if t.numel() == 0:  # an empty list arrives as float32
        return t.long()
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        raise TypeError(f"{name} must hold integer token ids, got dtype {t.dtype}")
    return t.long()


def _check_model(model: Any) -> None:
    if not callable(model):
        raise TypeError(f"model must be callable (tokens -> logits), got {type(model).__name__}")
    for attr in ("mask_token_id", "vocab_size"):
        if not isinstance(getattr(model, attr, None), int):
            raise TypeError(f"model must have an int attribute {attr!r} (see MaskedDiffusionLM)")


def _check_steps(steps: Any, limit: int, what: str) -> int:
    positive_int("steps", steps)
    if steps > limit:
        raise ValueError(
            f"steps ({steps}) must be <= {what} ({limit}): each step reveals at least one token"
        )
    return steps


def decode(
    model: Any,
    prompt: Any,
    gen_length: int,
    steps: int,
    strategy: str | Strategy = "confidence",
    *,
    generator: torch.Generator | None = None,
) -> DecodeResult:
    """Generate ``gen_length`` tokens after a prompt with a masked diffusion LM.

    The sequence ``prompt + [mask] * gen_length`` is decoded in ``steps`` steps by
    ``strategy``, under ``torch.no_grad()`` (results carry no autograd graph).

    Args:
        model: A :class:`~poke_smc.model.MaskedDiffusionLM`.
        prompt: int ``(P,)`` or ``(B, P)`` token ids (tensor, array or list), fully
            observed: no mask tokens. ``P`` may be 0.
        gen_length: Tokens to generate, >= 1.
        steps: Decoding steps, ``1 <= steps <= gen_length``.
        strategy: ``"random"``, ``"confidence"``, ``"margin"``, ``"entropy"``,
            ``"best-of-n"`` or a strategy object (:class:`ScoreRemasking`,
            :class:`BestOfN`, :class:`~poke_smc.smc.PokeSMC`).
        generator: Random source for stochastic strategies (on the model's device or CPU).

    Returns:
        A :class:`DecodeResult` over the whole sequence (``L = P + gen_length``); the
        generated part is ``result.tokens[:, P:]``. A 1-D prompt gives ``B = 1``.

    Raises:
        ValueError: If ``gen_length < 1``, ``steps`` is out of range, the prompt has the
            wrong rank, holds a mask token (use :func:`infill`) or an id outside the
            vocabulary, or prompt plus answer exceed the model's ``max_len``.
        TypeError: If the model lacks the interface or the prompt is not integer.
    """
    _check_model(model)
    positive_int("gen_length", gen_length)
    _check_steps(steps, gen_length, "gen_length")
    device = model_device(model)
    p = _as_tokens(prompt, "prompt", device)
    if p.ndim == 1:
        p = p[None]
    if p.ndim != 2:
        raise ValueError(f"prompt must have shape (P,) or (B, P), got {tuple(p.shape)}")
    mask_id = int(model.mask_token_id)
    if (p == mask_id).any():
        where = (p == mask_id).nonzero()[:5].tolist()
        raise ValueError(
            f"prompt holds the mask token {mask_id} at (row, position) {where}; decode() "
            "generates after a fully observed prompt: use infill() to fill masks in place"
        )
    _check_ids(p, model, "prompt")
    max_len = getattr(model, "max_len", None)
    if isinstance(max_len, int) and p.shape[1] + gen_length > max_len:
        raise ValueError(
            f"prompt length ({p.shape[1]}) + gen_length ({gen_length}) exceeds the model's "
            f"max_len ({max_len})"
        )
    x = torch.cat([p, torch.full((p.shape[0], gen_length), mask_id, device=device)], dim=1)
    with torch.no_grad():  # decoding never needs gradients; results carry no graph
        return resolve_strategy(strategy).run(model, x, steps, generator)


def _check_ids(t: torch.Tensor, model: Any, name: str) -> None:
    mask_id = int(model.mask_token_id)
    bad = ((t < 0) | (t >= model.vocab_size)) & (t != mask_id)
    if bad.any():
        raise ValueError(
            f"{name} holds ids outside [0, {model.vocab_size}) (vocabulary) other than the "
            f"mask {mask_id}: {t[bad][:5].tolist()}"
        )


def infill(
    model: Any,
    tokens: Any,
    steps: int,
    strategy: str | Strategy = "confidence",
    *,
    generator: torch.Generator | None = None,
) -> DecodeResult:
    """Fill every mask token of ``tokens`` in place (infilling, sudoku cells, ...).

    Runs under ``torch.no_grad()``; ``tokens`` itself is not modified.

    Args:
        model: A :class:`~poke_smc.model.MaskedDiffusionLM`.
        tokens: int ``(L,)`` or ``(B, L)`` with ``model.mask_token_id`` where a token is
            to be generated; every row needs at least ``steps`` masks. Not modified.
        steps: Decoding steps, ``1 <= steps <=`` the fewest masks in a row.
        strategy: As in :func:`decode`.
        generator: Random source for stochastic strategies.

    Returns:
        A :class:`DecodeResult` (``B = 1`` for 1-D input).

    Raises:
        ValueError: If a row has no mask, ``steps`` is out of range, the rank is wrong or
            an id is outside the vocabulary.
        TypeError: If the model lacks the interface or ``tokens`` is not integer.
    """
    _check_model(model)
    x = _as_tokens(tokens, "tokens", model_device(model))
    if x.ndim == 1:
        x = x[None]
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(f"tokens must have shape (L,) or (B, L) with L >= 1, got {tuple(x.shape)}")
    _check_ids(x, model, "tokens")
    n_masked = (x == int(model.mask_token_id)).sum(-1)
    if int(n_masked.min()) == 0:
        rows = (n_masked == 0).nonzero().flatten()[:5].tolist()
        raise ValueError(f"tokens rows {rows} hold no mask token: nothing to infill")
    _check_steps(steps, int(n_masked.min()), "the fewest masked positions in a row")
    with torch.no_grad():
        return resolve_strategy(strategy).run(model, x.clone(), steps, generator)


def path_log_likelihood(
    model: Any, tokens: torch.Tensor, reveal_step: torch.Tensor
) -> torch.Tensor:
    """Recompute the Path LL of recorded trajectories, one network call per step.

    ``PathLL = sum_t sum_{i: reveal_step_i = t} log p(tokens_i | x_t)`` where ``x_t``
    holds the tokens revealed before step ``t`` (and the given ones, ``reveal_step ==
    -1``) and masks elsewhere.

    Args:
        model: The model the trajectories are scored under.
        tokens: int64 ``(B, L)`` final sequences.
        reveal_step: int64 ``(B, L)``: reveal step of each position, -1 if given.

    Returns:
        float32 ``(B,)`` Path LL in nats.

    Raises:
        ValueError: If the shapes differ.
    """
    if tokens.shape != reveal_step.shape or tokens.ndim != 2:
        raise ValueError(
            f"tokens {tuple(tokens.shape)} and reveal_step {tuple(reveal_step.shape)} must "
            "both have shape (B, L)"
        )
    mask_id = int(model.mask_token_id)
    total = torch.zeros(tokens.shape[0], dtype=torch.float32, device=tokens.device)
    with torch.no_grad():
        for t in range(int(reveal_step.max()) + 1):
            now = reveal_step == t
            if not now.any():
                continue
            state = torch.where((reveal_step >= 0) & (reveal_step >= t), mask_id, tokens)
            lp = log_probs(model, state).gather(-1, tokens[..., None]).squeeze(-1)
            total = total + torch.where(now, lp, 0.0).sum(-1)
    return total
