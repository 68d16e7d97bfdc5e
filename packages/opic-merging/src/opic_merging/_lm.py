"""Scoring fixed (prompt, answer) pairs under many merged weights, cheaply.

A merge that changes only decoder layers ``s..L-1`` leaves the hidden states entering
layer ``s`` unchanged, so :class:`CachedScorer` computes them once (one forward of the
base, stopped at layer ``s`` by a pre-hook that also records the attention mask and
rotary embeddings the model built) and each evaluation then runs only layers
``s..L-1``, the final norm and the output head at the answer positions. When the
merged tensors include anything below the layers (embeddings), it falls back to a full
forward. The result equals a full forward of the merged model (tested).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

__all__ = ["CachedScorer", "generate"]

_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")


class _Stop(Exception):
    pass


def _layers(model: Any) -> Any:
    return getattr(getattr(model, "model", None), "layers", None)


def first_changed_layer(model: Any, names: Sequence[str]) -> int | None:
    """The lowest decoder layer any of ``names`` lies in; None if the prefix changes too.

    Tensors after the layers (final norm, output head) do not move the start; any other
    tensor outside the layers (embeddings) returns None (no caching possible).
    """
    layers = _layers(model)
    if layers is None:
        return None
    start = len(layers)
    for n in names:
        m = _LAYER.search(n)
        if m is not None:
            start = min(start, int(m.group(1)))
        elif not (n.startswith("model.norm.") or n.startswith("lm_head.")):
            return None
    return start


def _encode(tokenizer: Any, text: str) -> list[int]:
    ids = tokenizer.encode(text)
    return [int(i) for i in (ids.tolist() if hasattr(ids, "tolist") else ids)]


class CachedScorer:
    """Log-likelihood, greedy match and entropy of fixed answers under changing weights.

    Args:
        model: A causal LM (Llama-style ``model.model.layers`` for the cached path); it
            is deep-copied, and :meth:`score` writes weights into the copy only.
        tokenizer: ``encode(str) -> list[int]``.
        pairs: ``(prompt, answer)`` strings; the answer is scored after the prompt
            (tokenized apart and concatenated, as the core's fine-tuning does).
        names: Names of the tensors that :meth:`score` will be given (decides where the
            cache starts).
        batch_size: Sequences per forward.
        device: Where to run (default: the model's device).
        work_model: A copy of ``model`` to write weights into instead of a new deep
            copy (share one between scorers; then give weights to every :meth:`score`).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        pairs: Sequence[tuple[str, str]],
        names: Sequence[str],
        *,
        batch_size: int = 32,
        device: Any = None,
        work_model: Any = None,
    ) -> None:
        if not pairs:
            raise ValueError("pairs must be non-empty")
        self.device = (
            torch.device(device) if device is not None else next(model.parameters()).device
        )
        # work_model: share another scorer's copy (then pass weights to every score call)
        self.model = (
            work_model if work_model is not None else copy.deepcopy(model).to(self.device).eval()
        )
        self.names = tuple(names)
        self.start = first_changed_layer(self.model, self.names)
        self._params = dict(self.model.named_parameters())
        missing = [n for n in self.names if n not in self._params]
        if missing:
            raise ValueError(f"names not among the model's parameters: {missing[:5]}")
        self.batches: list[dict[str, Any]] = []
        encoded = []
        for prompt, answer in pairs:
            p, a = _encode(tokenizer, prompt), _encode(tokenizer, answer)
            if not p or not a:
                raise ValueError(f"empty prompt or answer after tokenization: {(prompt, answer)!r}")
            encoded.append((p + a, len(p)))
        self.n = len(encoded)
        for lo in range(0, len(encoded), batch_size):
            chunk = encoded[lo : lo + batch_size]
            width = max(len(s) for s, _ in chunk)
            ids = torch.zeros((len(chunk), width), dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            rows, pos, targets, seq = [], [], [], []
            first = []
            for r, (s, start) in enumerate(chunk):
                ids[r, : len(s)] = torch.tensor(s)
                mask[r, : len(s)] = 1
                for t in range(start, len(s)):
                    rows.append(r)
                    pos.append(t - 1)
                    targets.append(s[t])
                    seq.append(r)
                first.append(len(rows) - (len(s) - start))
            batch = {
                "ids": ids.to(self.device),
                "mask": mask.to(self.device),
                "rows": torch.tensor(rows, device=self.device),
                "pos": torch.tensor(pos, device=self.device),
                "targets": torch.tensor(targets, device=self.device),
                "seq": torch.tensor(seq, device=self.device),
                "first": torch.tensor(first, device=self.device),
                "size": len(chunk),
            }
            if self.start is not None:
                batch["hidden"], batch["kwargs"] = self._prefix(batch)
            self.batches.append(batch)

    @torch.no_grad()
    def _prefix(self, batch: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        layers = _layers(self.model)
        captured: dict[str, Any] = {}
        if self.start >= len(layers):  # only the norm/head change: cache the last layer's output
            out = self.model.model(batch["ids"], attention_mask=batch["mask"], use_cache=False)
            return out.last_hidden_state, {"after_norm": True}

        def hook(module: Any, args: Any, kwargs: Any) -> None:
            captured["hidden"] = args[0] if args else kwargs["hidden_states"]
            captured["kwargs"] = {k: v for k, v in kwargs.items() if k != "hidden_states"}
            raise _Stop

        handle = layers[self.start].register_forward_pre_hook(hook, with_kwargs=True)
        try:
            self.model(batch["ids"], attention_mask=batch["mask"], use_cache=False)
        except _Stop:
            pass
        finally:
            handle.remove()
        return captured["hidden"].detach(), captured["kwargs"]

    @torch.no_grad()
    def set_weights(self, weights: Mapping[str, Any]) -> None:
        """Write ``name -> tensor`` into the scorer's model copy (names from ``names``)."""
        for name, value in weights.items():
            self._params[name].copy_(value.to(self._params[name].device))

    @torch.no_grad()
    def _final_hidden(self, batch: dict[str, Any]) -> Any:
        if self.start is None:
            out = self.model.model(batch["ids"], attention_mask=batch["mask"], use_cache=False)
            return out.last_hidden_state
        h, kw = batch["hidden"], batch["kwargs"]
        if kw.get("after_norm"):
            return h
        for layer in _layers(self.model)[self.start :]:
            h = layer(h, **kw)
            h = h[0] if isinstance(h, tuple) else h
        return self.model.model.norm(h)

    @torch.no_grad()
    def score(self, weights: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        """Score every pair under ``weights`` (written first, if given).

        Returns:
            ``logprob``: sum of the answer tokens' log-probabilities, shape ``(n,)``;
            ``mean_logprob``: the same per answer token; ``match``: 1.0 where greedy
            decoding from the prompt reproduces the answer's tokens (every answer token
            is the argmax given the ones before it), else 0.0; ``entropy``: entropy
            (nats) of the next-token distribution after the prompt; ``n_tokens``.
        """
        if weights is not None:
            self.set_weights(weights)
        out: dict[str, list[Any]] = {k: [] for k in ("logprob", "match", "entropy", "n_tokens")}
        for batch in self.batches:
            h = self._final_hidden(batch)
            logits = self.model.lm_head(h[batch["rows"], batch["pos"]]).float()
            logp = torch.log_softmax(logits, dim=-1)
            tok = logp.gather(1, batch["targets"][:, None])[:, 0]
            hit = (logits.argmax(dim=-1) == batch["targets"]).float()
            size = batch["size"]
            lp = torch.zeros(size, device=tok.device).index_add_(0, batch["seq"], tok)
            cnt = torch.zeros(size, device=tok.device).index_add_(
                0, batch["seq"], torch.ones_like(tok)
            )
            hits = torch.zeros(size, device=tok.device).index_add_(0, batch["seq"], hit)
            first = logp[batch["first"]]
            ent = -(first.exp() * first).sum(dim=-1)
            out["logprob"].append(lp.cpu())
            out["n_tokens"].append(cnt.cpu())
            out["match"].append((hits == cnt).float().cpu())
            out["entropy"].append(ent.cpu())
        res = {k: torch.cat(v).double().numpy() for k, v in out.items()}
        res["mean_logprob"] = res["logprob"] / res["n_tokens"]
        return res


@torch.no_grad()
def generate(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    *,
    max_new_tokens: int = 8,
    sample: bool = False,
    temperature: float = 1.0,
    seed: int = 0,
    batch_size: int = 16,
    device: Any = None,
) -> list[str]:
    """Continue each prompt and return the text up to the first newline, stripped.

    Greedy (``sample=False``) or sampled at ``temperature`` under ``seed``; batched
    with left padding and a key-value cache (``model.generate``).
    """
    dev = torch.device(device) if device is not None else next(model.parameters()).device
    model = model.eval()
    pad = getattr(tokenizer, "pad_token_id", None)
    eos = getattr(tokenizer, "eos_token_id", None)
    pad = pad if pad is not None else (eos if eos is not None else 0)
    import inspect

    cache_kw = (
        "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    )
    outs: list[str] = []
    gen = torch.Generator().manual_seed(int(seed))
    for lo in range(0, len(prompts), batch_size):
        chunk = [_encode(tokenizer, p) for p in prompts[lo : lo + batch_size]]
        width = max(len(c) for c in chunk)
        ids = torch.full((len(chunk), width), int(pad), dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for r, c in enumerate(chunk):
            ids[r, width - len(c) :] = torch.tensor(c)
            mask[r, width - len(c) :] = 1
        ids, mask = ids.to(dev), mask.to(dev)
        pos = (mask.cumsum(dim=1) - 1).clamp(min=0)
        done = torch.zeros(len(chunk), dtype=torch.bool)
        new: list[list[int]] = [[] for _ in chunk]
        cache = None
        step_ids, step_pos, step_mask = ids, pos, mask
        for _ in range(max_new_tokens):
            out = model(
                step_ids,
                attention_mask=step_mask,
                position_ids=step_pos,
                use_cache=True,
                **{cache_kw: cache},
            )
            cache = getattr(out, "cache", None) if cache_kw == "cache" else out.past_key_values
            logits = out.logits[:, -1].float().cpu()
            if sample:
                probs = torch.softmax(logits / temperature, dim=-1)
                nxt = torch.multinomial(probs, 1, generator=gen)[:, 0]
            else:
                nxt = logits.argmax(dim=-1)
            for r, t in enumerate(nxt.tolist()):
                if not done[r]:
                    if eos is not None and t == eos:
                        done[r] = True
                    else:
                        new[r].append(t)
                        if "\n" in tokenizer.decode(new[r]):
                            done[r] = True
            if bool(done.all()):
                break
            step_ids = nxt[:, None].to(dev)
            step_pos = step_pos[:, -1:] + 1
            step_mask = torch.cat([step_mask, torch.ones_like(step_mask[:, :1])], dim=1)
        for r in range(len(chunk)):
            outs.append(tokenizer.decode(new[r]).split("\n")[0].strip())
    return outs
