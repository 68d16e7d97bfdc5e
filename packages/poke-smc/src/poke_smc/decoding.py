"""Decoding a masked diffusion LM: unmasking strategies, Path LL and NFE accounting.

A decoder starts from a sequence in which some positions hold the mask token and, in
``steps`` network evaluations, reveals them all: at every step the model gives
log-probabilities ``log p(x_i = v | x_t)`` for every position, a token is chosen for
each masked position, and a *strategy* picks which ``k_t`` of them to reveal (LLaDA's
remasking: the rest stay masked). The number revealed per step follows LLaDA's even
schedule (:func:`reveal_schedule`).

:func:`decode` generates after a prompt as LLaDA's ``generate`` does: the answer may be
split into semi-autoregressive blocks (``block_length``), each finished before the next
begins, with its own share of the steps; a batch of prompts of unequal lengths is
left-padded and decoded with an attention mask, so that each row gives what it gives
alone; and with ``eos_token_id`` the answer ends at its first end-of-sequence token.
A :class:`DecodePlan` carries that schedule to the strategies.

Path log-likelihood (the paper's Path LL) of a trajectory is the sum, over steps, of the
log-probabilities of the tokens revealed at that step given the partial sequence
before it: ``PathLL = sum_t sum_{i revealed at t} log p(x_i | x_t)``. It is computed
for free while decoding (:attr:`DecodeResult.path_ll`) and can be recomputed for any
recorded trajectory with :func:`path_log_likelihood`.

NFE (network function evaluations) counts sequences passed through the network, per
input sequence: ``steps`` for one trajectory, ``n * steps`` for best-of-``n``.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from icml26_core.validation import check_choice, check_float, check_int

from poke_smc.model import model_device

__all__ = [
    "SCORES",
    "BestOfN",
    "DecodePlan",
    "DecodeResult",
    "MajorityVote",
    "ScoreRemasking",
    "Strategy",
    "decode",
    "infill",
    "log_probs",
    "majority_vote",
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
        tokens: int64 ``(B, L)``: the final sequences (the prompt, left-padded when the
            prompts differ in length, included for :func:`decode`).
        reveal_step: int64 ``(B, L)``: the step (0-based, counted over all blocks) at
            which each position was revealed; ``-1`` for positions that were given.
        token_logprob: float32 ``(B, L)``: ``log p`` of each revealed token at its reveal
            step (nats); 0 for given positions.
        path_ll: float32 ``(B,)``: Path LL of each trajectory, ``token_logprob.sum(-1)``.
        nfe: Network function evaluations spent per input sequence.
        steps: Decoding steps taken (network calls per trajectory); fewer than planned
            when end-of-sequence tokens filled the rest of the answer.
        candidates: int64 ``(B, N, L)``: every sample's / particle's final sequence for
            best-of-N, majority vote and SMC (None for a single trajectory).
        candidate_path_ll: float32 ``(B, N)``: their Path LL (None for one trajectory).
        resamples: Resampling events per input sequence (SMC only, else None).
        log_weights: float32 ``(B, N)``: SMC's final log importance weights of the
            candidates (unnormalised; :attr:`weights` normalises them). The weighted
            particles target ``q(tau) exp(beta * PathLL(tau))`` (see
            :class:`~poke_smc.smc.PokeSMC`). None for other strategies.
        attention_mask: bool ``(B, L)``: positions the model attended to (False on the
            left padding of shorter prompts); None when nothing was padded.
        answer_lengths: int64 ``(B,)``: generated tokens before the first
            end-of-sequence token (the whole ``gen_length`` if none); None unless
            :func:`decode` was given ``eos_token_id``.
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
    log_weights: torch.Tensor | None = None
    attention_mask: torch.Tensor | None = None
    answer_lengths: torch.Tensor | None = None

    @property
    def weights(self) -> torch.Tensor | None:
        """SMC's normalised final weights ``(B, N)`` (rows sum to 1), or None."""
        if self.log_weights is None:
            return None
        return torch.softmax(self.log_weights, dim=-1)


@dataclass(frozen=True)
class DecodePlan:
    """When each masked position may be revealed: blocks, steps, padding and EOS.

    :func:`decode` and :func:`infill` build the plan; a strategy's ``run`` follows it.
    The blocks are decoded one after the other, each finished before the next begins
    (LLaDA's semi-autoregressive remasking); within block ``b`` a step reveals
    ``ceil(r / s)`` of its ``r`` masked positions when ``s`` of its ``steps[b]`` steps
    are left, which is LLaDA's even schedule (:func:`reveal_schedule`).

    Attributes:
        blocks: ``((start, end), ...)``: position ranges ``[start, end)`` in decoding
            order; one block ``((0, L),)`` decodes every mask together.
        steps: Steps of each block (``len(steps) == len(blocks)``), each >= 1.
        attention_mask: bool ``(B, L)``: positions the model may attend to; None for
            all (the model is then called as ``model(tokens)``).
        eos_token_id: With an id, a row that reveals this token at a position
            ``>= eos_from`` has every masked position after it filled with it at once
            (the answer has ended; LLaDA pads its answers with EOS), at no NFE.
        eos_from: First position where an end-of-sequence token ends the answer.

    Raises:
        ValueError: If the blocks and steps do not pair up or a count is < 1.
    """

    blocks: tuple[tuple[int, int], ...]
    steps: tuple[int, ...]
    attention_mask: torch.Tensor | None = None
    eos_token_id: int | None = None
    eos_from: int = 0

    def __post_init__(self) -> None:
        if len(self.blocks) != len(self.steps) or not self.blocks:
            raise ValueError(
                f"blocks ({len(self.blocks)}) and steps ({len(self.steps)}) must pair up, "
                "with at least one block"
            )
        for s in self.steps:
            check_int("steps", s, low=1)

    @classmethod
    def single(cls, steps: int, length: int) -> DecodePlan:
        """One block over the whole sequence, decoded in ``steps`` steps."""
        return cls(((0, int(length)),), (int(steps),))

    @property
    def total_steps(self) -> int:
        """Steps over all blocks."""
        return sum(self.steps)

    def repeat(self, n: int) -> DecodePlan:
        """The plan for every row repeated ``n`` times (samples, particles)."""
        if self.attention_mask is None or n == 1:
            return self
        return dataclasses.replace(self, attention_mask=self.attention_mask.repeat_interleave(n, 0))

    def iterate(self) -> Any:
        """Yield ``(t, start, end, steps_left)`` for every step ``t`` of the plan."""
        t = 0
        for (lo, hi), s in zip(self.blocks, self.steps, strict=True):
            for i in range(s):
                yield t, lo, hi, s - i
                t += 1


def _as_plan(plan: DecodePlan | int, tokens: torch.Tensor) -> DecodePlan:
    if isinstance(plan, DecodePlan):
        return plan
    return DecodePlan.single(check_int("steps", plan, low=1), tokens.shape[1])


def _block_targets(
    masked: torch.Tensor, lo: int, hi: int, steps_left: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Masked positions inside ``[lo, hi)`` and how many to reveal now (LLaDA's schedule)."""
    cand = masked.clone()
    cand[:, :lo] = False
    cand[:, hi:] = False
    r = cand.sum(-1)
    return cand, torch.div(r + steps_left - 1, steps_left, rounding_mode="floor")


class Strategy(Protocol):
    """An unmasking strategy: decode every masked position of ``tokens`` by a plan."""

    def run(
        self,
        model: Any,
        tokens: torch.Tensor,
        plan: DecodePlan | int,
        generator: torch.Generator | None = None,
    ) -> DecodeResult:
        """Decode validated int64 ``tokens (B, L)`` following ``plan`` (or ``steps``)."""
        ...


def _takes_keyword(fn: Any, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _accepts_attention_mask(model: Any) -> bool:
    """Whether ``model(tokens, attention_mask=...)`` is accepted (padding needs it)."""
    fn = model.forward if isinstance(model, torch.nn.Module) else model
    return _takes_keyword(fn, "attention_mask")


def log_probs(
    model: Any, tokens: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Float32 log-probabilities ``(B, L, V)`` of ``model`` on ``tokens (B, L)``.

    The mask token (when it is inside the vocabulary) gets probability 0.

    Args:
        model: The masked diffusion LM.
        tokens: int64 ``(B, L)``.
        attention_mask: Optional bool ``(B, L)``, passed as ``attention_mask=``; without
            it the model is called as ``model(tokens)``.

    Raises:
        ValueError: If the model's output has the wrong shape or holds NaN.
    """
    if attention_mask is None:
        logits = model(tokens)
    else:
        logits = model(tokens, attention_mask=attention_mask)
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
    if attention_mask is not None:  # padded positions are never decoded; keep them finite
        logits = logits.masked_fill(~attention_mask.bool()[..., None], 0.0)
    if torch.isnan(logits).any():
        raise ValueError("model returned NaN logits")
    return torch.log_softmax(logits, dim=-1)


def reveal_schedule(n_masked: torch.Tensor, steps: int) -> torch.Tensor:
    """Tokens to reveal at each step: ``n // steps``, one more in the first ``n % steps``.

    This is LLaDA's schedule for a linear noise schedule: the masked count falls evenly.
    The decoders apply it block by block, one step at a time, as ``ceil(r / s)`` with
    ``r`` masks and ``s`` steps left, which gives the same counts.

    Args:
        n_masked: int ``(B,)``: masked positions per row.
        steps: Number of steps (>= 1). With ``steps > n`` the last entries are 0.

    Returns:
        int64 ``(B, steps)`` whose rows sum to ``n_masked``.
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
    without replacement with probability proportional to ``exp(p / position_temperature)``),
    so that trajectories explore other unmasking orders.

    Args:
        logp: float ``(B, L, V)`` log-probabilities of the current state.
        masked: bool ``(B, L)``: positions that may be revealed now.
        k: int ``(B,)``: how many to reveal in each row (``<= masked.sum(-1)``; 0 is
            allowed).
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
    def start(cls, tokens: torch.Tensor, mask_id: int, attention_mask: Any = None) -> _Paths:
        x = tokens.clone()
        masked = x == mask_id
        if attention_mask is not None:
            masked &= attention_mask.bool()
        return cls(
            x,
            masked,
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

    def fill_after_eos(self, logp: torch.Tensor, t: int, plan: DecodePlan) -> torch.Tensor:
        """Fill the masks after each row's first revealed EOS with EOS; the Path LL added."""
        eos = plan.eos_token_id
        if eos is None:
            return torch.zeros_like(self.path_ll)
        length = self.x.shape[1]
        pos = torch.arange(length, device=self.x.device)
        is_eos = (self.x == eos) & ~self.masked & (pos >= plan.eos_from)
        first = torch.where(is_eos, pos, length).min(-1).values
        after = (pos[None, :] > first[:, None]) & self.masked
        if not bool(after.any()):
            return torch.zeros_like(self.path_ll)
        new = torch.full_like(self.x, eos)
        return self.reveal(new, after, logp[..., eos], t)

    def take(self, rows: torch.Tensor) -> _Paths:
        """The trajectories at ``rows`` (resampling, selection)."""
        return _Paths(
            self.x[rows],
            self.masked[rows],
            self.reveal_step[rows],
            self.token_lp[rows],
            self.path_ll[rows],
        )

    def result(self, calls: int) -> DecodeResult:
        """One trajectory per row: ``calls`` network calls, as many NFE."""
        return DecodeResult(self.x, self.reveal_step, self.token_lp, self.path_ll, calls, calls)

    def select(
        self,
        batch: int,
        n: int,
        calls: int,
        chosen: torch.Tensor | None = None,
        resamples: torch.Tensor | None = None,
        log_weights: torch.Tensor | None = None,
    ) -> DecodeResult:
        """Rows in groups of ``n`` per input: keep ``chosen`` (default: highest Path LL)."""
        best = self.path_ll.view(batch, n).argmax(-1) if chosen is None else chosen
        kept = self.take(torch.arange(batch, device=best.device) * n + best)
        return DecodeResult(
            tokens=kept.x,
            reveal_step=kept.reveal_step,
            token_logprob=kept.token_lp,
            path_ll=kept.path_ll,
            nfe=n * calls,
            steps=calls,
            candidates=self.x.view(batch, n, -1),
            candidate_path_ll=self.path_ll.view(batch, n),
            resamples=resamples,
            log_weights=log_weights,
        )


def _first_of_each(batch: int, n: int, device: Any) -> torch.Tensor:
    """Bool ``(batch * n,)``: the first row of each group of ``n`` (the greedy candidate)."""
    return torch.arange(batch * n, device=device) % n == 0


def _unmask(
    model: Any,
    tokens: torch.Tensor,
    plan: DecodePlan | int,
    *,
    score: str,
    temperature: float,
    generator: torch.Generator | None,
    position_temperature: float | None = None,
    on_step: StepHook | None = None,
    greedy_rows: torch.Tensor | None = None,
) -> tuple[_Paths, int]:
    """The greedy / sampled remasking loop shared by the strategies and POKE's rollouts.

    Returns the final paths and the number of network calls made.
    """
    plan = _as_plan(plan, tokens)
    am = plan.attention_mask
    paths = _Paths.start(tokens, int(model.mask_token_id), am)
    calls = 0
    for t, lo, hi, left in plan.iterate():
        cand, k = _block_targets(paths.masked, lo, hi, left)
        if not bool(cand.any()):  # EOS already filled this block: no network call
            continue
        logp = log_probs(model, paths.x, am)
        calls += 1
        if on_step is not None:
            on_step(t, logp, paths.masked, paths.path_ll)
        new, reveal, lp = propose(
            logp,
            cand,
            k,
            score=score,
            temperature=temperature,
            position_temperature=position_temperature,
            generator=generator,
            greedy_rows=greedy_rows,
        )
        paths.reveal(new, reveal, lp, t)
        paths.fill_after_eos(logp, t, plan)
    return paths, calls


def _check_score_temperature(
    score: str, temperature: float, position_temperature: float | None = None
) -> None:
    check_choice("score", score, SCORES)
    check_float("temperature", temperature, low=0.0)
    if position_temperature is not None:
        check_float("position_temperature", position_temperature, low=0.0)


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
        TypeError: If a temperature is not a number.
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
        plan: DecodePlan | int,
        generator: torch.Generator | None = None,
    ) -> DecodeResult:
        """Decode ``tokens (B, L)`` following ``plan``; ``nfe == steps``."""
        paths, calls = _unmask(
            model,
            tokens,
            plan,
            score=self.score,
            temperature=self.temperature,
            position_temperature=self.position_temperature,
            generator=generator,
        )
        return paths.result(calls)


def _sample_paths(
    model: Any,
    tokens: torch.Tensor,
    plan: DecodePlan | int,
    n: int,
    score: str,
    temperature: float,
    position_temperature: float | None,
    greedy_first: bool,
    generator: torch.Generator | None,
) -> tuple[_Paths, int]:
    """``n`` independent trajectories per row of ``tokens``, all in one batch."""
    batch = tokens.shape[0]
    plan = _as_plan(plan, tokens).repeat(n)
    greedy_rows = _first_of_each(batch, n, tokens.device) if greedy_first else None
    return _unmask(
        model,
        tokens.repeat_interleave(n, 0),
        plan,
        score=score,
        temperature=temperature,
        position_temperature=position_temperature,
        generator=generator,
        greedy_rows=greedy_rows,
    )


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
        TypeError: If ``n`` is not an int or a temperature not a number.
    """

    n: int = 8
    score: str = "confidence"
    temperature: float = 1.0
    position_temperature: float | None = None
    greedy_first: bool = False

    def __post_init__(self) -> None:
        check_int("n", self.n, low=1)
        _check_score_temperature(self.score, self.temperature, self.position_temperature)
        _check_distinct(self.n, "n", self.temperature, self.position_temperature)

    def run(
        self,
        model: Any,
        tokens: torch.Tensor,
        plan: DecodePlan | int,
        generator: torch.Generator | None = None,
    ) -> DecodeResult:
        """Decode ``n`` trajectories per row of ``tokens (B, L)``; ``nfe == n * steps``."""
        paths, calls = _sample_paths(
            model,
            tokens,
            plan,
            self.n,
            self.score,
            self.temperature,
            self.position_temperature,
            self.greedy_first,
            generator,
        )
        return paths.select(tokens.shape[0], self.n, calls)


def majority_vote(candidates: torch.Tensor, candidate_path_ll: torch.Tensor) -> torch.Tensor:
    """Index of the majority answer among each row's candidates.

    The answer given most often wins (self-consistency); a tie between answers goes to
    the one whose best candidate has the highest Path LL, and that candidate is the
    index returned.

    Args:
        candidates: int64 ``(B, N, L)`` final sequences.
        candidate_path_ll: float ``(B, N)`` their Path LL.

    Returns:
        int64 ``(B,)`` indices into ``N``.

    Raises:
        ValueError: If the shapes do not match.
    """
    if candidates.ndim != 3 or candidate_path_ll.shape != candidates.shape[:2]:
        raise ValueError(
            f"candidates {tuple(candidates.shape)} must be (B, N, L) and candidate_path_ll "
            f"{tuple(candidate_path_ll.shape)} must be (B, N)"
        )
    same = (candidates[:, :, None, :] == candidates[:, None, :, :]).all(-1)  # (B, N, N)
    votes = same.sum(-1)
    top = votes.max(-1, keepdim=True).values
    return candidate_path_ll.float().masked_fill(votes < top, float("-inf")).argmax(-1)


@dataclass(frozen=True)
class MajorityVote:
    """Majority vote (self-consistency): ``n`` sampled trajectories, the commonest answer.

    The standard decoding-time scaling baseline on exact-answer tasks: the same samples
    as :class:`BestOfN`, but the answer returned is the one produced most often (ties
    broken by Path LL, see :func:`majority_vote`). Costs ``n * steps`` NFE.

    Args:
        n: Number of trajectories (>= 1).
        score: Position score of the sampled trajectories.
        temperature: Token sampling temperature.
        position_temperature: Order sampling temperature; None: ``temperature``.

    Raises:
        ValueError: As :class:`BestOfN`.
        TypeError: As :class:`BestOfN`.
    """

    n: int = 8
    score: str = "confidence"
    temperature: float = 1.0
    position_temperature: float | None = None

    def __post_init__(self) -> None:
        check_int("n", self.n, low=1)
        _check_score_temperature(self.score, self.temperature, self.position_temperature)
        _check_distinct(self.n, "n", self.temperature, self.position_temperature)

    def run(
        self,
        model: Any,
        tokens: torch.Tensor,
        plan: DecodePlan | int,
        generator: torch.Generator | None = None,
    ) -> DecodeResult:
        """Decode ``n`` trajectories per row and return the majority answer's best one."""
        batch, n = tokens.shape[0], self.n
        paths, calls = _sample_paths(
            model,
            tokens,
            plan,
            n,
            self.score,
            self.temperature,
            self.position_temperature,
            False,
            generator,
        )
        chosen = majority_vote(paths.x.view(batch, n, -1), paths.path_ll.view(batch, n))
        return paths.select(batch, n, calls, chosen=chosen)


_NAMES = (*SCORES, "best-of-n", "majority")


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
        if strategy == "majority":
            return MajorityVote()
        raise ValueError(
            f"strategy must be one of {_NAMES} or a strategy object "
            f"(ScoreRemasking, BestOfN, MajorityVote, PokeSMC), got {strategy!r}"
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
    check_int("steps", steps, low=1)
    if steps > limit:
        raise ValueError(
            f"steps ({steps}) must be <= {what} ({limit}): each step reveals at least one token"
        )
    return int(steps)


def _ragged(prompt: Any) -> bool:
    """Whether ``prompt`` is a list of 1-D sequences of unequal lengths."""
    if not isinstance(prompt, list | tuple) or len(prompt) < 2:
        return False
    if not all(isinstance(p, list | tuple | np.ndarray | torch.Tensor) for p in prompt):
        return False
    return len({len(p) for p in prompt}) > 1


def _prompt_batch(
    prompt: Any, attention_mask: Any, pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(B, P)`` prompts, left-padded if ragged, and their bool mask (None: no padding)."""
    if _ragged(prompt):
        if attention_mask is not None:
            raise ValueError(
                "attention_mask is for an already padded (B, P) prompt; a list of prompts of "
                "unequal lengths is padded here"
            )
        rows = [_as_tokens(p, "prompt", device) for p in prompt]
        if any(r.ndim != 1 for r in rows):
            raise ValueError("prompt must be a list of 1-D sequences of token ids")
        width = max(r.shape[0] for r in rows)
        p = torch.full((len(rows), width), pad_id, dtype=torch.long, device=device)
        am = torch.zeros(len(rows), width, dtype=torch.bool, device=device)
        for i, r in enumerate(rows):
            p[i, width - r.shape[0] :] = r
            am[i, width - r.shape[0] :] = True
        return p, am
    p = _as_tokens(prompt, "prompt", device)
    if p.ndim == 1:
        p = p[None]
    if p.ndim != 2:
        raise ValueError(f"prompt must have shape (P,) or (B, P), got {tuple(p.shape)}")
    if attention_mask is None:
        return p, None
    am = torch.as_tensor(attention_mask, device=device)
    if am.ndim == 1:
        am = am[None]
    if am.shape != p.shape:
        raise ValueError(
            f"attention_mask {tuple(am.shape)} must have the prompt's shape {tuple(p.shape)}"
        )
    if am.dtype != torch.bool:
        if bool(((am != 0) & (am != 1)).any()):
            raise ValueError("attention_mask must hold 0/1 or booleans")
        am = am != 0
    if bool(am.all()):
        return p, None
    return torch.where(am, p, pad_id), am


def _blocks(start: int, gen_length: int, block_length: int | None) -> tuple[tuple[int, int], ...]:
    if block_length is None:
        return ((start, start + gen_length),)
    check_int("block_length", block_length, low=1)
    if gen_length % block_length:
        raise ValueError(
            f"gen_length ({gen_length}) must be a multiple of block_length ({block_length})"
        )
    return tuple(
        (start + b * block_length, start + (b + 1) * block_length)
        for b in range(gen_length // block_length)
    )


def _block_steps(steps: Any, blocks: tuple[tuple[int, int], ...]) -> tuple[int, ...]:
    n_blocks = len(blocks)
    if isinstance(steps, list | tuple):
        if len(steps) != n_blocks:
            raise ValueError(
                f"steps as a sequence needs one entry per block ({n_blocks}), got {len(steps)}"
            )
        per = tuple(check_int("steps", s, low=1) for s in steps)
    else:
        total = check_int("steps", steps, low=1)
        if total % n_blocks:
            raise ValueError(
                f"steps ({total}) must be a multiple of the number of blocks ({n_blocks}), or "
                "a sequence with the steps of each block"
            )
        per = (total // n_blocks,) * n_blocks
    size = blocks[0][1] - blocks[0][0]
    what = "gen_length" if n_blocks == 1 else "block_length"
    for s in per:
        _check_steps(s, size, what if n_blocks == 1 else f"{what} (per block)")
    return per


def decode(
    model: Any,
    prompt: Any,
    gen_length: int,
    steps: int | Sequence[int],
    strategy: str | Strategy = "confidence",
    *,
    block_length: int | None = None,
    attention_mask: Any = None,
    pad_token_id: int | None = None,
    eos_token_id: int | None = None,
    generator: torch.Generator | None = None,
) -> DecodeResult:
    """Generate ``gen_length`` tokens after a prompt with a masked diffusion LM.

    The sequence ``prompt + [mask] * gen_length`` is decoded in ``steps`` steps by
    ``strategy``, under ``torch.no_grad()`` (results carry no autograd graph), as LLaDA's
    ``generate`` does it:

    - ``block_length``: the answer is cut into ``gen_length / block_length`` blocks,
      decoded left to right, each finished before the next begins (semi-autoregressive
      remasking); ``steps`` are split evenly over the blocks, or given per block.
    - Prompts of unequal lengths (a list of sequences) are left-padded with
      ``pad_token_id`` and decoded with an attention mask; an already padded ``(B, P)``
      prompt takes its ``attention_mask``. The model must accept
      ``model(tokens, attention_mask=...)`` (both models of this package do) and, like
      them, place positions by the mask, so each row decodes as it would alone.
    - ``eos_token_id``: once a row reveals this token in its answer, the masks after it
      are filled with it at once (LLaDA pads answers with EOS) and
      :attr:`DecodeResult.answer_lengths` gives the tokens before it; when every row is
      done, decoding stops early (fewer NFE).

    Args:
        model: A :class:`~poke_smc.model.MaskedDiffusionLM`.
        prompt: int ``(P,)`` or ``(B, P)`` token ids (tensor, array or list), or a list of
            ``B`` 1-D sequences of different lengths. No mask tokens. ``P`` may be 0.
        gen_length: Tokens to generate, >= 1.
        steps: Decoding steps: an int (a multiple of the number of blocks, at most
            ``gen_length``) or one int per block (each at most ``block_length``).
        strategy: ``"random"``, ``"confidence"``, ``"margin"``, ``"entropy"``,
            ``"best-of-n"``, ``"majority"`` or a strategy object (:class:`ScoreRemasking`,
            :class:`BestOfN`, :class:`MajorityVote`, :class:`~poke_smc.smc.PokeSMC`).
        block_length: Length of the semi-autoregressive blocks (a divisor of
            ``gen_length``); None: one block.
        attention_mask: 0/1 or bool ``(B, P)`` (or ``(P,)``) for a padded ``(B, P)``
            prompt: 0 on padding.
        pad_token_id: Id written on the padding; default ``model.pad_token_id`` if the
            model has one, else 0. Padded positions are never attended to.
        eos_token_id: End-of-sequence id (see above); None: no EOS handling.
        generator: Random source for stochastic strategies (on the model's device or CPU).

    Returns:
        A :class:`DecodeResult` over the whole sequence (``L = P + gen_length``, ``P``
        the padded prompt width); the generated part is ``result.tokens[:, P:]``. A 1-D
        prompt gives ``B = 1``.

    Raises:
        ValueError: If ``gen_length < 1``, ``steps`` or ``block_length`` is out of range
            or does not divide, the prompt has the wrong rank, holds a mask token (use
            :func:`infill`) or an id outside the vocabulary, the attention mask does not
            fit it, or prompt plus answer exceed the model's ``max_len``.
        TypeError: If the model lacks the interface (or the ``attention_mask`` keyword
            that padding needs), or the prompt is not integer.
    """
    _check_model(model)
    gen_length = check_int("gen_length", gen_length, low=1)
    if eos_token_id is not None:
        eos_token_id = check_int("eos_token_id", eos_token_id, low=0, high=model.vocab_size - 1)
    device = model_device(model)
    mask_id = int(model.mask_token_id)
    pad = pad_token_id if pad_token_id is not None else getattr(model, "pad_token_id", None)
    pad = 0 if pad is None else check_int("pad_token_id", pad, low=0, high=model.vocab_size - 1)
    if pad == mask_id:
        raise ValueError(f"pad_token_id ({pad}) must differ from the mask token id")
    p, am = _prompt_batch(prompt, attention_mask, pad, device)
    attended = torch.ones_like(p, dtype=torch.bool) if am is None else am
    if ((p == mask_id) & attended).any():
        where = ((p == mask_id) & attended).nonzero()[:5].tolist()
        raise ValueError(
            f"prompt holds the mask token {mask_id} at (row, position) {where}; decode() "
            "generates after a fully observed prompt: use infill() to fill masks in place"
        )
    _check_ids(torch.where(attended, p, 0), model, "prompt")
    if am is not None and not _accepts_attention_mask(model):
        raise TypeError(
            "prompts of unequal lengths need a model that takes "
            "model(tokens, attention_mask=...); this one does not"
        )
    max_len = getattr(model, "max_len", None)
    longest = int(attended.sum(-1).max()) if p.shape[1] else 0
    if isinstance(max_len, int) and longest + gen_length > max_len:
        raise ValueError(
            f"prompt length ({longest}) + gen_length ({gen_length}) exceeds the model's "
            f"max_len ({max_len})"
        )
    blocks = _blocks(p.shape[1], gen_length, block_length)
    per_block = _block_steps(steps, blocks)
    x = torch.cat([p, torch.full((p.shape[0], gen_length), mask_id, device=device)], dim=1)
    full_am = None
    if am is not None:
        ones = torch.ones(p.shape[0], gen_length, dtype=torch.bool, device=device)
        full_am = torch.cat([am, ones], dim=1)
    plan = DecodePlan(blocks, per_block, full_am, eos_token_id, p.shape[1])
    with torch.no_grad():  # decoding never needs gradients; results carry no graph
        res = resolve_strategy(strategy).run(model, x, plan, generator)
    lengths = None
    if eos_token_id is not None:
        is_eos = res.tokens[:, p.shape[1] :] == eos_token_id
        first = torch.where(is_eos, torch.arange(gen_length, device=device), gen_length)
        lengths = first.min(-1).values
    return dataclasses.replace(res, attention_mask=full_am, answer_lengths=lengths)


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
        TypeError: If the model lacks the interface, ``tokens`` is not integer or
            ``steps`` is not an int.
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
    steps = _check_steps(steps, int(n_masked.min()), "the fewest masked positions in a row")
    with torch.no_grad():
        return resolve_strategy(strategy).run(
            model, x.clone(), DecodePlan.single(steps, x.shape[1]), generator
        )


def path_log_likelihood(
    model: Any,
    tokens: torch.Tensor,
    reveal_step: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Recompute the Path LL of recorded trajectories, one network call per step.

    ``PathLL = sum_t sum_{i: reveal_step_i = t} log p(tokens_i | x_t)`` where ``x_t``
    holds the tokens revealed before step ``t`` (and the given ones, ``reveal_step ==
    -1``) and masks elsewhere.

    Args:
        model: The model the trajectories are scored under.
        tokens: int64 ``(B, L)`` final sequences.
        reveal_step: int64 ``(B, L)``: reveal step of each position, -1 if given.
        attention_mask: The :attr:`DecodeResult.attention_mask` of padded prompts.

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
            lp = log_probs(model, state, attention_mask).gather(-1, tokens[..., None]).squeeze(-1)
            total = total + torch.where(now, lp, 0.0).sum(-1)
    return total
