"""The next-token entropy stream of a causal LM over a chat-templated prompt.

For a conversation rendered with the tokenizer's chat template into tokens
``x_0 .. x_{T-1}``, the stream holds at every prompt token ``t``

- the next-token entropy ``H_t = -sum_v p(v | x_<=t) log p(v | x_<=t)`` (nats): how
  unsure the model is after reading ``x_t``;
- the surprisal ``-log p(x_t | x_<t)`` (nats; NaN for ``t = 0``), which the perplexity
  baselines read;
- masks of the system-prompt content tokens and the user content tokens (template
  special tokens and role headers are in neither), found from the tokenizer's
  character offsets.

Tokens after the last user token (the closing template tags, a generation prompt) are
not computed. The template prefix up to the first user token (with SmolLM2: the
default system prompt "You are a helpful AI assistant named SmolLM, trained by Hugging
Face") is the same for all prompts that share a system prompt; it is computed once and
its key-value cache is reused for every batch.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from icml26_core.validation import check_int

__all__ = ["EntropyStream", "StreamResult"]


@dataclass(frozen=True, eq=False)
class StreamResult:
    """Entropy stream of one templated prompt.

    Attributes:
        token_ids: Token ids through the last user token, int64, shape ``(T,)``.
        entropies: Next-token entropy at each token (nats), float64, ``(T,)``.
        surprisal: ``-log p(x_t | x_<t)`` (nats), float64, ``(T,)``; NaN at ``t = 0``.
        system_mask: System-prompt content tokens, bool, ``(T,)``.
        user_mask: User content tokens, bool, ``(T,)``.
    """

    token_ids: np.ndarray
    entropies: np.ndarray
    surprisal: np.ndarray
    system_mask: np.ndarray
    user_mask: np.ndarray

    @property
    def system_entropies(self) -> np.ndarray:
        """Entropies of the system-prompt content tokens, ``(n_system,)``."""
        return self.entropies[self.system_mask]

    @property
    def user_entropies(self) -> np.ndarray:
        """Entropies of the user content tokens, ``(n_user,)``."""
        return self.entropies[self.user_mask]

    @property
    def user_surprisal(self) -> np.ndarray:
        """Surprisal of the user content tokens, ``(n_user,)``."""
        return self.surprisal[self.user_mask]


def _check_messages(messages: Any) -> list[dict[str, str]]:
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, Sequence) or not messages:
        raise ValueError(
            "messages must be a non-empty list of {'role', 'content'} dicts or a user string"
        )
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or "role" not in m or "content" not in m:
            raise ValueError(f"messages[{i}] must be a dict with 'role' and 'content', got {m!r}")
        if not isinstance(m["content"], str):
            raise TypeError(f"messages[{i}]['content'] must be a str")
        out.append({"role": str(m["role"]), "content": m["content"]})
    users = [m for m in out if m["role"] == "user"]
    if not users:
        raise ValueError("messages must contain a user message")
    if any(not m["content"].strip() for m in users):
        raise ValueError("messages: a user message is empty; the stream needs user tokens")
    return out


class EntropyStream:
    """Compute :class:`StreamResult` streams with a Hugging Face causal LM.

    Args:
        model: A ``transformers`` causal LM (``model(input_ids, ...).logits``); used in
            eval mode, on its own device, without gradients.
        tokenizer: Its fast tokenizer (character offsets are needed) with a chat template.
        batch_size: Prompts per forward pass.

    Raises:
        ValueError: If ``batch_size < 1`` or the tokenizer gives no character offsets.

    Example:
        ``EntropyStream(*load_smollm2()).stream("Explain photosynthesis.")``
    """

    def __init__(self, model: Any, tokenizer: Any, *, batch_size: int = 8) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = check_int("batch_size", batch_size, low=1)
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError("tokenizer must be a fast tokenizer (character offsets are needed)")
        self._special = {int(i) for i in getattr(tokenizer, "all_special_ids", [])}
        # transformers >= 5.20 names the argument ``cache``; earlier ones ``past_key_values``
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"

    # ---- templating -------------------------------------------------------------------

    def _render(self, messages: list[dict[str, str]]) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=False
        )

    def _system_span(self, messages: list[dict[str, str]], text: str) -> tuple[int, int]:
        system = [m for m in messages if m["role"] == "system"]
        if system:
            content = system[0]["content"]
            if not content.strip():
                raise ValueError("messages: the system message is empty; the baseline needs it")
            start = text.find(content)
            if start < 0:
                raise ValueError("the chat template does not render the system message verbatim")
            return start, start + len(content)
        # The template's default system prompt: the text that an empty system message removes.
        # (It is a default prompt only if the empty message's rendering is the text with
        # one span removed.)
        empty = self._render([{"role": "system", "content": ""}, *messages])
        lead = 0
        while lead < min(len(text), len(empty)) and text[lead] == empty[lead]:
            lead += 1
        tail = 0
        while tail < min(len(text), len(empty)) - lead and text[-1 - tail] == empty[-1 - tail]:
            tail += 1
        if len(text) <= len(empty) or lead + tail < len(empty):
            raise ValueError(
                "the chat template adds no default system prompt; pass a system message "
                "(the CUSUM baseline is estimated on it)"
            )
        return lead, len(text) - tail

    def encode(self, messages: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Template and tokenize one conversation, truncated after its last user token.

        Args:
            messages: A list of ``{"role", "content"}`` dicts, or a user string.

        Returns:
            ``(token_ids, system_mask, user_mask)``, each of shape ``(T,)``.

        Raises:
            ValueError: If there is no user message, a user message is empty, or the
                template has no system prompt and none is given.
        """
        msgs = _check_messages(messages)
        text = self._render(msgs)
        s0, s1 = self._system_span(msgs, text)
        spans = []
        cursor = s1
        for m in msgs:
            if m["role"] != "user":
                continue
            start = text.find(m["content"], cursor)
            if start < 0:
                raise ValueError("the chat template does not render the user message verbatim")
            spans.append((start, start + len(m["content"])))
            cursor = start + len(m["content"])
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = np.asarray(enc["input_ids"], dtype=np.int64)
        offsets = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
        regular = ~np.isin(ids, list(self._special))
        a, b = offsets[:, 0], offsets[:, 1]
        system = regular & (a < s1) & (b > s0)
        user = np.zeros_like(system)
        for u0, u1 in spans:
            user |= regular & (a < u1) & (b > u0)
        last = int(np.flatnonzero(user)[-1]) + 1
        if not system[:last].any():
            raise ValueError("no system-prompt token precedes the user message")
        return ids[:last], system[:last], user[:last]

    # ---- forward passes -----------------------------------------------------------------

    def stream(self, messages: Any) -> StreamResult:
        """The stream of one conversation (see :meth:`stream_batch`)."""
        return self.stream_batch([messages])[0]

    def stream_batch(self, conversations: Sequence[Any]) -> list[StreamResult]:
        """Streams of many conversations, batched, with the shared prefix computed once.

        Args:
            conversations: Conversations (lists of messages, or user strings).

        Returns:
            One :class:`StreamResult` per conversation, in order.

        Raises:
            TypeError: If ``conversations`` is a single string or not a sequence.
            ValueError: As :meth:`encode`, naming the conversation's index.
        """
        import torch

        if isinstance(conversations, str | Mapping) or not isinstance(conversations, Sequence):
            raise TypeError(
                "conversations must be a list of conversations (user strings or message "
                f"lists), got {type(conversations).__name__}; use stream() for one"
            )
        encoded = []
        for i, conv in enumerate(conversations):
            try:
                encoded.append(self.encode(conv))
            except ValueError as exc:
                raise ValueError(f"conversations[{i}]: {exc}") from exc
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, (ids, _, user) in enumerate(encoded):
            p = int(np.flatnonzero(user)[0])
            groups.setdefault(tuple(ids[:p].tolist()), []).append(i)
        out: list[StreamResult | None] = [None] * len(encoded)
        device = next(iter(self.model.parameters())).device
        self.model.eval()
        with torch.no_grad():
            for prefix, members in groups.items():
                pre = torch.tensor([prefix], dtype=torch.long, device=device)
                res = self.model(input_ids=pre, use_cache=True)
                pre_logp = torch.log_softmax(res.logits[0].float(), dim=-1)
                pre_h = _entropy(pre_logp)
                pre_s = np.full(len(prefix), np.nan)
                if len(prefix) > 1:
                    pre_s[1:] = -pre_logp[:-1].gather(-1, pre[0, 1:, None])[:, 0].double().cpu()
                for c in range(0, len(members), self.batch_size):
                    chunk = members[c : c + self.batch_size]
                    rests = [encoded[i][0][len(prefix) :] for i in chunk]
                    width = max(r.size for r in rests)
                    x = torch.zeros((len(chunk), width), dtype=torch.long, device=device)
                    mask = torch.zeros((len(chunk), len(prefix) + width), dtype=torch.long)
                    mask[:, : len(prefix)] = 1
                    for j, r in enumerate(rests):
                        x[j, : r.size] = torch.from_numpy(r)
                        mask[j, len(prefix) : len(prefix) + r.size] = 1
                    cache = copy.deepcopy(_cache_of(res))
                    cache.batch_repeat_interleave(len(chunk))
                    logits = self.model(
                        input_ids=x, attention_mask=mask.to(device), **{self._cache_kw: cache}
                    ).logits
                    for j, i in enumerate(chunk):
                        n = rests[j].size
                        logp = torch.log_softmax(logits[j, :n].float(), dim=-1)
                        prev = torch.cat([pre_logp[-1:], logp[:-1]])
                        surpr = -prev.gather(-1, x[j, :n, None])[:, 0].double().cpu().numpy()
                        ids, system, user = encoded[i]
                        out[i] = StreamResult(
                            token_ids=ids,
                            entropies=np.concatenate([pre_h, _entropy(logp)]),
                            surprisal=np.concatenate([pre_s, surpr]),
                            system_mask=system,
                            user_mask=user,
                        )
        return out  # type: ignore[return-value]


def _cache_of(output: Any) -> Any:
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def _entropy(logp: Any) -> np.ndarray:
    """Entropy (nats) of each row of log-probabilities, as float64 numpy."""
    return (-(logp.exp() * logp).sum(-1)).double().cpu().numpy()
