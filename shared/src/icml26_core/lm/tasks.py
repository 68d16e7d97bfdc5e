"""Fine-tune one base model on several tasks and cache each task model (for merging studies).

Model-merging methods (task arithmetic, TIES, evolutionary merging) start from ``K``
models fine-tuned from one base ``theta_0``. :func:`finetune_task_models` makes them:
for each task it copies the base, trains the chosen parameters (all of them, or only
the top ``K`` decoder layers of a Llama-style model), and keeps only the trained
tensors, so that ``K`` task models of SmolLM2 cost ``K`` times the top layers, not ``K``
times 538 MB. The result is cached on disk under ``<cache>/lm/task-models/``, keyed
by the base weights, the task data and every training setting: a second call with the
same inputs loads the models instead of training them.

A task is either

- a sequence of ``(prompt, answer)`` string pairs: supervised fine-tuning with the loss
  on the answer tokens only (the prompt is context), the tokenizer's end-of-sequence
  id appended to the answer when it has one; or
- a flat integer token array: language modelling on random windows, through
  :func:`icml26_core.lm.train_lm`.

Example:
    >>> from icml26_core.datasets import ByteTokenizer
    >>> from icml26_core.lm import tiny_llama
    >>> tasks = {"upper": [("cat ->", " CAT"), ("dog ->", " DOG")],
    ...          "reverse": [("cat ->", " tac"), ("dog ->", " god")]}
    >>> tm = finetune_task_models(tiny_llama("1M"), tasks, tokenizer=ByteTokenizer(),
    ...                           top_layers=1, steps=5, cache=False)
    >>> tm.tasks, len(tm.trainable)    # the last layer: q, k, v, o, 3 MLP matrices, 2 norms
    (('upper', 'reverse'), 9)
    >>> upper = tm.model("upper")      # a copy of the base with the task's tensors
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from icml26_core._lazy import require
from icml26_core.datasets.cache import cache_dir
from icml26_core.validation import check_float, check_int

torch = require("torch", "lm")
F = torch.nn.functional

__all__ = ["TaskModels", "finetune_task_models", "model_fingerprint", "trainable_names"]

_TASKS_VERSION = 1  # bump when the training recipe changes, so caches are rebuilt


@dataclass
class TaskModels:
    """Task models fine-tuned from one base: the base, and each task's trained tensors.

    Attributes:
        base: The base model (never modified by :func:`finetune_task_models`).
        tasks: Task names, in the order given.
        trainable: Names (as in ``base.state_dict()``) of the fine-tuned parameters;
            every other tensor of a task model equals the base's.
        params: ``task -> {name: tensor}``: the fine-tuned values (CPU, base dtype).
        histories: ``task -> {"step_losses": [...], "final_loss": float}``.
        meta: ``config`` (every setting), ``key`` (the cache key), ``folder`` (the
            cache folder or None) and ``loaded_from_cache`` (task -> bool).
    """

    base: Any
    tasks: tuple[str, ...]
    trainable: tuple[str, ...]
    params: dict[str, dict[str, Any]]
    histories: dict[str, dict[str, Any]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def _check(self, task: str) -> str:
        if task not in self.params:
            raise ValueError(f"unknown task {task!r}; tasks: {', '.join(self.tasks)}")
        return task

    def model(self, task: str) -> Any:
        """A new copy of the base with ``task``'s fine-tuned parameters, in eval mode."""
        self._check(task)
        model = copy.deepcopy(self.base)
        own = dict(model.named_parameters())
        with torch.no_grad():
            for name, value in self.params[task].items():
                own[name].copy_(value.to(own[name].device))
        return model.eval()

    def task_vector(self, task: str) -> dict[str, Any]:
        """``theta_task - theta_0`` on the trainable parameters (CPU tensors)."""
        self._check(task)
        base = dict(self.base.named_parameters())
        return {n: v - base[n].detach().cpu() for n, v in self.params[task].items()}

    def state_dict(self, task: str) -> dict[str, Any]:
        """The full state dict of ``task``'s model (base tensors where not trained)."""
        self._check(task)
        state = {k: v.detach().clone() for k, v in self.base.state_dict().items()}
        for name, value in self.params[task].items():
            state[name] = value.to(state[name].device).clone()
        return state


def trainable_names(model: Any, top_layers: int | None = None) -> tuple[str, ...]:
    """Names of the parameters to fine-tune: all, or those of the top decoder layers.

    Args:
        model: A causal LM. With ``top_layers``, it must be Llama-style (a
            ``model.model.layers`` list of decoder layers, as transformers' Llama,
            SmolLM2 and :func:`tiny_llama` have).
        top_layers: None for every parameter, or K >= 1 for the last K decoder layers
            (not the embedding, the final norm or the tied output head).

    Raises:
        ValueError: If ``top_layers`` exceeds the number of layers, or the model has
            no ``model.layers``.
    """
    names = [n for n, _ in model.named_parameters()]
    if top_layers is None:
        return tuple(names)
    layers = getattr(getattr(model, "model", None), "layers", None)
    if layers is None:
        raise ValueError("top_layers needs a Llama-style model with model.model.layers")
    n = len(layers)
    k = check_int("top_layers", top_layers, low=1, high=n)
    prefixes = tuple(f"model.layers.{i}." for i in range(n - k, n))
    return tuple(name for name in names if name.startswith(prefixes))


def model_fingerprint(model: Any) -> str:
    """SHA-256 of a model's parameter and buffer names, shapes, dtypes and values."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(f"{name}|{tuple(tensor.shape)}|{t.dtype}|".encode())
        digest.update(t.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _task_fingerprint(data: Any) -> tuple[str, str]:
    """(kind, sha256) of a task's data: ``"pairs"`` or ``"tokens"``."""
    digest = hashlib.sha256()
    if isinstance(data, np.ndarray | torch.Tensor):
        arr = data.detach().cpu().numpy() if isinstance(data, torch.Tensor) else data
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError("a token task must be a 1-D integer array")
        digest.update(np.ascontiguousarray(arr.astype(np.int64)).tobytes())
        return "tokens", digest.hexdigest()
    pairs = list(data)
    if not pairs:
        raise ValueError("a task needs at least one (prompt, answer) pair")
    for pair in pairs:
        if (
            not isinstance(pair, tuple | list)
            or len(pair) != 2
            or not all(isinstance(s, str) for s in pair)
        ):
            raise TypeError(f"a task is a sequence of (prompt, answer) str pairs; got {pair!r}")
        if not pair[1]:
            raise ValueError(f"empty answer in pair {pair!r}")
        digest.update(json.dumps(pair).encode())
    return "pairs", digest.hexdigest()


def _encode_pairs(
    pairs: Sequence[tuple[str, str]], tokenizer: Any, max_len: int
) -> list[tuple[list[int], int]]:
    """Token ids of prompt + answer (+ eos), and where the answer starts."""
    eos = getattr(tokenizer, "eos_token_id", None)
    out = []
    for prompt, answer in pairs:
        p = list(tokenizer.encode(prompt))
        a = list(tokenizer.encode(answer)) + ([int(eos)] if eos is not None else [])
        if len(a) >= max_len:
            raise ValueError(f"answer of {len(a)} tokens does not fit max_len={max_len}")
        p = p[-(max_len - len(a)) :] if len(p) + len(a) > max_len else p  # keep the prompt's end
        out.append((p + a, len(p)))
    return out


def _pair_loss(model: Any, batch: list[tuple[list[int], int]], device: Any) -> Any:
    """Mean cross-entropy of the answer tokens (prompt and padding masked)."""
    width = max(len(ids) for ids, _ in batch)
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    labels = torch.full((len(batch), width), -100, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for r, (seq, start) in enumerate(batch):
        ids[r, : len(seq)] = torch.tensor(seq)
        labels[r, start : len(seq)] = torch.tensor(seq[start:])
        mask[r, : len(seq)] = 1
    ids, labels, mask = ids.to(device), labels.to(device), mask.to(device)
    out = model(ids, attention_mask=mask, use_cache=False)
    logits = getattr(out, "logits", out)[:, :-1].float()
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1), ignore_index=-100
    )


def _train_pairs(
    model: Any,
    encoded: list[tuple[list[int], int]],
    params: list[Any],
    *,
    steps: int,
    batch_size: int,
    lr: float,
    weight_decay: float,
    seed: int,
    device: Any,
    progress: Any,
) -> list[float]:
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, betas=(0.9, 0.95))
    generator = torch.Generator().manual_seed(seed)
    losses = []
    model.train()
    steps_iter: Iterable[int] = range(steps)
    if callable(progress):
        steps_iter = progress(steps_iter, "fine-tuning")
    for _ in steps_iter:
        pick = torch.randint(0, len(encoded), (batch_size,), generator=generator).tolist()
        optimizer.zero_grad(set_to_none=True)
        loss = _pair_loss(model, [encoded[i] for i in pick], device)
        value = float(loss.detach())
        if not math.isfinite(value):
            losses.append(value)
            break
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        losses.append(value)
    return losses


def _save(path: Path, payload: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def finetune_task_models(
    base: Any,
    tasks: Mapping[str, Any],
    *,
    tokenizer: Any = None,
    top_layers: int | None = None,
    steps: int = 200,
    batch_size: int = 8,
    lr: float = 1e-4,
    weight_decay: float = 0.0,
    max_len: int = 256,
    seq_len: int = 128,
    seed: int = 0,
    device: str | Any = None,
    cache: bool = True,
    base_key: str | None = None,
    progress: Callable[..., Iterable[int]] | None = None,
) -> TaskModels:
    """Fine-tune a copy of ``base`` on each task; cache and return the task models.

    Each task gets the same recipe: AdamW (betas 0.9, 0.95) over the trainable
    parameters at a constant ``lr``, ``steps`` steps of ``batch_size`` examples
    (pairs drawn with replacement, or windows of ``seq_len`` tokens) seeded by
    ``seed``, gradient norm clipped to 1. Only the trainable parameters change.

    Args:
        base: A causal LM (e.g. ``tiny_llama("1M")`` or ``load_smollm2(fresh=True)[0]``);
            copied per task, never modified.
        tasks: ``name -> data``: a sequence of ``(prompt, answer)`` str pairs, or a 1-D
            integer token array (see the module docstring).
        tokenizer: Needed for pair tasks: ``encode(str) -> list[int]`` and optionally
            ``eos_token_id`` (the SmolLM2 tokenizer, ``ByteTokenizer``).
        top_layers: Fine-tune only the last K decoder layers (see
            :func:`trainable_names`); None fine-tunes every parameter.
        steps: Optimizer steps per task.
        batch_size: Examples (pairs or windows) per step.
        lr: Learning rate.
        weight_decay: AdamW weight decay.
        max_len: Longest prompt + answer in tokens (longer prompts keep their end).
        seq_len: Window length of token tasks.
        seed: Seed of the batches.
        device: Train here (default: where ``base`` is); results are kept on the CPU.
        cache: Load task models from the cache when present, save them after training.
        base_key: A name for the base weights in the cache key (e.g.
            ``"smollm2-q4_1"``) instead of hashing them (:func:`model_fingerprint`).
        progress: A callable ``progress(iterable, description)`` such as
            ``RunContext.progress``.

    Returns:
        A :class:`TaskModels`.

    Raises:
        ValueError: On an empty task set, an empty task, bad sizes, or ``top_layers``
            out of range.
        TypeError: If a task is neither pairs nor a token array, or a pair task has no
            tokenizer.
    """
    if not isinstance(tasks, Mapping) or not tasks:
        raise ValueError("tasks must be a non-empty mapping name -> data")
    for task_name in tasks:
        if not isinstance(task_name, str) or not task_name or "/" in task_name:
            raise ValueError(f"task names must be plain non-empty str, got {task_name!r}")
    steps = check_int("steps", steps, low=1)
    batch_size = check_int("batch_size", batch_size, low=1)
    max_len = check_int("max_len", max_len, low=2)
    seq_len = check_int("seq_len", seq_len, low=1)
    seed = check_int("seed", seed, low=0)
    lr = check_float("lr", lr, low=0.0, low_inclusive=False)
    weight_decay = check_float("weight_decay", weight_decay, low=0.0)
    names = trainable_names(base, top_layers)
    kinds = {t: _task_fingerprint(d) for t, d in tasks.items()}
    if tokenizer is None and any(k == "pairs" for k, _ in kinds.values()):
        raise TypeError("pair tasks need a tokenizer (an object with encode)")
    config = {
        "version": _TASKS_VERSION,
        "top_layers": top_layers,
        "steps": steps,
        "batch_size": batch_size,
        "lr": lr,
        "weight_decay": weight_decay,
        "max_len": max_len,
        "seq_len": seq_len,
        "seed": seed,
        "torch": torch.__version__.split("+")[0],
        "tokenizer": type(tokenizer).__name__ if tokenizer is not None else None,
        "vocab_size": getattr(tokenizer, "vocab_size", None),
    }
    base_id = base_key if base_key is not None else model_fingerprint(base)
    key = hashlib.sha256(json.dumps({"base": base_id, **config}, sort_keys=True).encode())
    key_hex = key.hexdigest()[:20]
    folder = cache_dir("lm", "task-models", key_hex) if cache else None
    dev = torch.device(device) if device is not None else next(base.parameters()).device
    params: dict[str, dict[str, Any]] = {}
    histories: dict[str, dict[str, Any]] = {}
    loaded: dict[str, bool] = {}
    for task, data in tasks.items():
        kind, digest = kinds[task]
        path = folder / f"{task}-{digest[:16]}.pt" if folder is not None else None
        if path is not None and path.is_file():
            saved = torch.load(path, map_location="cpu", weights_only=True)
            params[task], histories[task], loaded[task] = saved["params"], saved["history"], True
            continue
        model = copy.deepcopy(base).to(dev)
        chosen = set(names)
        trainable = []
        for name, p in model.named_parameters():
            p.requires_grad_(name in chosen)
            if name in chosen:
                trainable.append(p)
        if kind == "pairs":
            encoded = _encode_pairs(list(data), tokenizer, max_len)
            losses = _train_pairs(
                model,
                encoded,
                trainable,
                steps=steps,
                batch_size=batch_size,
                lr=lr,
                weight_decay=weight_decay,
                seed=seed,
                device=dev,
                progress=progress,
            )
        else:
            from icml26_core.lm.training import train_lm

            optimizer = torch.optim.AdamW(
                trainable, lr=lr, weight_decay=weight_decay, betas=(0.9, 0.95)
            )
            history = train_lm(
                model,
                data,
                None,
                steps=steps,
                batch_size=batch_size,
                seq_len=seq_len,
                optimizer=optimizer,
                seed=seed,
                progress=progress,
                eval_every=steps,
            )
            losses = history.step_losses
        trained = {n: p.detach().cpu().clone() for n, p in model.named_parameters() if n in chosen}
        del model
        params[task] = trained
        histories[task] = {
            "step_losses": [float(v) for v in losses],
            "final_loss": float(losses[-1]) if losses else math.nan,
            "kind": kind,
        }
        loaded[task] = False
        if path is not None:
            _save(path, {"params": trained, "history": histories[task]})
    meta = {
        "config": config,
        "key": key_hex,
        "base_key": base_id,
        "folder": str(folder) if folder is not None else None,
        "loaded_from_cache": loaded,
    }
    return TaskModels(base, tuple(tasks), names, params, histories, meta)
