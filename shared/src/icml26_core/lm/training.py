"""A short, readable training loop for causal language models, and its pieces.

The loop samples windows of ``seq_len + 1`` tokens from a flat token array with a
seeded generator, minimises next-token cross-entropy (nats per token) with any
``torch.optim.Optimizer`` (AdamW by default) and optional LR scheduler, clips the
gradient norm, and evaluates the validation loss and perplexity every
``eval_every`` steps. Packages reuse it instead of writing their own, so that their
comparisons differ only in what they set out to compare.

Example:
    >>> from icml26_core.datasets import load_text
    >>> from icml26_core.lm import tiny_llama, train_lm
    >>> corpus = load_text("shakespeare")  # doctest: +SKIP
    >>> model = tiny_llama("1M", vocab_size=256)
    >>> history = train_lm(model, corpus.tokens("train"), corpus.tokens("validation"),
    ...                    steps=200, batch_size=16, seq_len=128)  # doctest: +SKIP
    >>> history.val_loss[-1] < history.val_loss[0]  # doctest: +SKIP
    True
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from icml26_core._lazy import require
from icml26_core.lm.checkpoints import CHECKPOINT_FILE, load_checkpoint, save_checkpoint

torch = require("torch", "lm")
F = torch.nn.functional

__all__ = [
    "TrainHistory",
    "cosine_schedule",
    "evaluate_loss",
    "lm_loss",
    "sample_batch",
    "train_lm",
]


@dataclass
class TrainHistory:
    """What :func:`train_lm` measured; one entry per evaluation (step 0 included).

    Attributes:
        step: Optimizer steps taken at each evaluation.
        tokens_seen: Training tokens consumed (``step * batch_size * seq_len``).
        train_loss: Mean training loss (nats/token) over the steps since the previous
            evaluation; NaN at step 0.
        val_loss: Validation loss (nats/token); NaN when no validation tokens.
        val_perplexity: ``exp(val_loss)``.
        lr: Learning rate of the first parameter group.
        wall_time: Seconds spent in training steps so far (evaluation and
            checkpointing excluded), CUDA synchronised.
        step_losses: Training loss of every step.
        diverged: True when a non-finite loss stopped training early.
    """

    step: list[int] = field(default_factory=list)
    tokens_seen: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    val_perplexity: list[float] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    wall_time: list[float] = field(default_factory=list)
    step_losses: list[float] = field(default_factory=list)
    diverged: bool = False

    @property
    def final_val_loss(self) -> float:
        """Validation loss at the last evaluation (NaN if none)."""
        return self.val_loss[-1] if self.val_loss else math.nan

    @property
    def best_val_loss(self) -> float:
        """Lowest validation loss seen (NaN if none is finite)."""
        finite = [v for v in self.val_loss if math.isfinite(v)]
        return min(finite) if finite else math.nan

    def as_dict(self) -> dict[str, Any]:
        """Plain lists and values, ready for ``Result.data`` or JSON."""
        return asdict(self)


def _as_tokens(tokens: Any, name: str, seq_len: int, vocab_size: int | None, device: Any) -> Any:
    """Validate a flat token array and return it as an int64 tensor on ``device``."""
    if isinstance(tokens, np.ndarray):
        if not np.issubdtype(tokens.dtype, np.integer):
            raise TypeError(f"{name} must hold integer token ids, got dtype {tokens.dtype}")
        tensor = torch.from_numpy(np.ascontiguousarray(tokens))
    elif isinstance(tokens, torch.Tensor):
        if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
            raise TypeError(f"{name} must hold integer token ids, got dtype {tokens.dtype}")
        tensor = tokens.detach()
    else:
        kind = type(tokens).__name__
        raise TypeError(f"{name} must be a numpy array or torch tensor, got {kind}")
    if tensor.ndim != 1:
        raise ValueError(f"{name} must be 1-D (n_tokens,), got shape {tuple(tensor.shape)}")
    if tensor.numel() < seq_len + 1:
        raise ValueError(
            f"{name} has {tensor.numel()} tokens; at least seq_len + 1 = {seq_len + 1} are needed"
        )
    lo, hi = int(tensor.min()), int(tensor.max())
    if lo < 0 or (vocab_size is not None and hi >= vocab_size):
        raise ValueError(
            f"{name} ids must lie in [0, {vocab_size}), got [{lo}, {hi}]"
            if vocab_size is not None
            else f"{name} ids must be nonnegative, got minimum {lo}"
        )
    return tensor.to(device=device, dtype=torch.long)


def _check_positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def _model_device(model: Any) -> Any:
    try:
        return next(iter(model.parameters())).device
    except StopIteration:
        return torch.device("cpu")


def _vocab_size(model: Any) -> int | None:
    size = getattr(getattr(model, "config", None), "vocab_size", None)
    return int(size) if size is not None else None


def _autocast(device: Any, dtype: Any) -> Any:
    if dtype is None:
        return nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=dtype)


def sample_batch(tokens: Any, batch_size: int, seq_len: int, generator: Any) -> Any:
    """Draw ``batch_size`` random windows of ``seq_len + 1`` consecutive tokens.

    Args:
        tokens: int64 tensor (n_tokens,), e.g. from a token array moved to the device.
        batch_size: Number of windows.
        seq_len: Model input length; each window has one more token (the last target).
        generator: A CPU ``torch.Generator``: the same seed gives the same batches.

    Returns:
        int64 tensor (batch_size, seq_len + 1) on ``tokens.device``; inputs are
        ``batch[:, :-1]`` and targets ``batch[:, 1:]``.
    """
    n_starts = tokens.numel() - seq_len
    starts = torch.randint(0, n_starts, (batch_size,), generator=generator)
    index = starts[:, None] + torch.arange(seq_len + 1)[None, :]
    return tokens[index.to(tokens.device)]


def lm_loss(model: Any, batch: Any, *, autocast_dtype: Any = None) -> Any:
    """Mean next-token cross-entropy of ``model`` on ``batch`` (nats per token).

    Args:
        model: A causal LM returning logits (batch, seq_len, vocab) or an object with
            ``.logits`` (transformers models).
        batch: int64 tensor (batch, seq_len + 1), as from :func:`sample_batch`.
        autocast_dtype: Run the forward pass under ``torch.autocast`` with this dtype
            (e.g. ``torch.bfloat16``); the loss itself is computed in float32.

    Returns:
        Scalar float32 tensor, differentiable.
    """
    inputs, targets = batch[:, :-1], batch[:, 1:]
    with _autocast(batch.device, autocast_dtype):
        if hasattr(getattr(model, "config", None), "use_cache"):
            out = model(inputs, use_cache=False)
        else:
            out = model(inputs)
    logits = getattr(out, "logits", out)
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), targets.reshape(-1))


def evaluate_loss(
    model: Any,
    tokens: Any,
    *,
    batch_size: int = 16,
    seq_len: int = 128,
    max_batches: int | None = None,
    autocast_dtype: Any = None,
) -> float:
    """Mean next-token loss (nats/token) over consecutive windows of ``tokens``.

    The windows are taken in order from the start with stride ``seq_len``, so the
    result is deterministic and every token after the first is predicted once (within
    its window's context). Perplexity is ``exp`` of the result.

    Args:
        model: A causal LM (see :func:`lm_loss`); evaluated in ``eval`` mode without
            gradients, and put back in the mode it was in.
        tokens: Flat integer token ids (n_tokens,), numpy array or torch tensor, in
            ``[0, vocab_size)``; not modified.
        batch_size: Windows per forward pass.
        seq_len: Context length of each window.
        max_batches: Evaluate at most this many batches (all windows when None).
        autocast_dtype: As in :func:`lm_loss`.

    Returns:
        Mean loss in nats per token.

    Raises:
        ValueError: If ``tokens`` is not 1-D, is shorter than ``seq_len + 1``, or holds
            ids outside the model's vocabulary; or a size argument is not positive.
        TypeError: If ``tokens`` does not hold integers.
    """
    batch_size = _check_positive_int("batch_size", batch_size)
    seq_len = _check_positive_int("seq_len", seq_len)
    if max_batches is not None:
        max_batches = _check_positive_int("max_batches", max_batches)
    device = _model_device(model)
    ids = _as_tokens(tokens, "tokens", seq_len, _vocab_size(model), device)
    n_windows = (ids.numel() - 1) // seq_len
    if max_batches is not None:
        n_windows = min(n_windows, max_batches * batch_size)
    windows = ids[: n_windows * seq_len + 1].unfold(0, seq_len + 1, seq_len)
    was_training = model.training
    model.eval()
    total = 0.0
    try:
        with torch.no_grad():
            for start in range(0, n_windows, batch_size):
                batch = windows[start : start + batch_size]
                loss = lm_loss(model, batch, autocast_dtype=autocast_dtype)
                total += float(loss) * batch.shape[0]
    finally:
        model.train(was_training)
    return total / n_windows


def cosine_schedule(
    optimizer: Any, *, warmup_steps: int, total_steps: int, min_lr_ratio: float = 0.1
) -> Any:
    """Linear warm-up then cosine decay to ``min_lr_ratio`` times the peak LR.

    Args:
        optimizer: The optimizer whose LR to schedule (its current LR is the peak).
        warmup_steps: Steps of linear warm-up from 0 (0 for none).
        total_steps: Step at which the cosine reaches its minimum.
        min_lr_ratio: Final LR as a fraction of the peak, in [0, 1].

    Returns:
        A ``torch.optim.lr_scheduler.LambdaLR``; call ``step()`` after each
        optimizer step (``train_lm`` does).

    Raises:
        ValueError: If the step counts or the ratio are out of range.
    """
    total_steps = _check_positive_int("total_steps", total_steps)
    if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or warmup_steps < 0:
        raise ValueError(f"warmup_steps must be a nonnegative int, got {warmup_steps!r}")
    if warmup_steps > total_steps:
        raise ValueError(f"warmup_steps ({warmup_steps}) must be <= total_steps ({total_steps})")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError(f"min_lr_ratio must be in [0, 1], got {min_lr_ratio!r}")

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def default_optimizer(model: Any, *, lr: float = 1e-3, weight_decay: float = 0.1) -> Any:
    """AdamW with betas (0.9, 0.95), weight decay on matrices only (as in nanoGPT)."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=lr, betas=(0.9, 0.95))


def _needs_loss(scheduler: Any) -> bool:
    """Whether ``scheduler.step`` takes the loss: ``needs_loss = True``, or ReduceLROnPlateau."""
    if getattr(scheduler, "needs_loss", False):
        return True
    return isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)


def _current_lr(optimizer: Any) -> float:
    """Learning rate of the first parameter group (NaN for an optimizer without groups)."""
    groups: Any = getattr(optimizer, "param_groups", None)
    try:
        return float(groups[0]["lr"])
    except (TypeError, KeyError, IndexError, ValueError):
        return math.nan


def _progress_iter(
    progress: bool | Callable[..., Iterable[int]] | None, steps: range
) -> Iterator[int]:
    if callable(progress):
        yield from progress(steps, "training")
    elif progress:
        from rich.progress import track

        yield from track(steps, description="training", transient=True)
    else:
        yield from steps


def train_lm(
    model: Any,
    train_tokens: Any,
    val_tokens: Any = None,
    *,
    steps: int,
    batch_size: int = 16,
    seq_len: int = 128,
    optimizer: Any = None,
    scheduler: Any = None,
    lr: float = 1e-3,
    weight_decay: float = 0.1,
    grad_clip: float | None = 1.0,
    eval_every: int | None = None,
    eval_batches: int | None = 8,
    device: str | Any = None,
    seed: int = 0,
    autocast_dtype: Any = None,
    closure: bool = False,
    progress: bool | Callable[..., Iterable[int]] | None = False,
    checkpoint_dir: str | Path | None = None,
    resume: bool = False,
) -> TrainHistory:
    """Train a causal LM on random windows of a token array; return what was measured.

    Each step draws ``batch_size`` windows of ``seq_len + 1`` tokens (seeded by
    ``seed``), computes the mean next-token cross-entropy, back-propagates, clips the
    global gradient norm to ``grad_clip``, and steps the optimizer, then the
    scheduler. At step 0, every ``eval_every`` steps and at the end, the validation
    loss is measured with :func:`evaluate_loss` on ``eval_batches`` batches (the
    same windows each time) and, when ``checkpoint_dir`` is set, a checkpoint is
    written there.

    Args:
        model: A causal LM (e.g. from :func:`tiny_llama`); trained in place.
        train_tokens: Flat integer token ids (n,), numpy or torch, not modified.
        val_tokens: Validation token ids, or None to skip validation.
        steps: Total number of optimizer steps.
        batch_size: Windows per step.
        seq_len: Context length.
        optimizer: Any optimizer over ``model``'s parameters (an object with ``step``
            and ``zero_grad``, e.g. a ``torch.optim.Optimizer`` or a wrapper around
            one), or a callable ``optimizer(model) -> optimizer`` that builds it; default
            AdamW(lr, betas (0.9, 0.95), ``weight_decay`` on matrices only).
        scheduler: Optional LR scheduler (an object with ``step``), or a callable
            ``scheduler(optimizer) -> scheduler`` that builds it on the optimizer in
            use (the default one included). It is stepped once per optimizer step:
            ``scheduler.step()``, or ``scheduler.step(loss)`` with the step's training
            loss (a float) when the scheduler has ``needs_loss = True`` or is a
            ``ReduceLROnPlateau`` (loss-driven schedules and warm-ups). A step with a
            non-finite loss stops training before the scheduler sees it.
        lr: Learning rate of the default optimizer (ignored when ``optimizer`` is given).
        weight_decay: Weight decay of the default optimizer.
        grad_clip: Maximum global gradient norm, or None for no clipping.
        eval_every: Steps between evaluations; default ``max(1, steps // 10)``.
        eval_batches: Batches per evaluation (None: the whole validation array).
        device: Move the model (and data) here first; default: where the model is.
        seed: Seed of the batch sampler.
        autocast_dtype: Forward passes under ``torch.autocast`` with this dtype.
        closure: Call ``optimizer.step(closure)`` with a closure that recomputes the
            loss and gradients on the step's batch (for methods that need several
            evaluations per step); otherwise ``optimizer.step()``.
        progress: False for silence, True for a progress bar, or a callable
            ``progress(iterable, description)`` such as ``RunContext.progress``.
        checkpoint_dir: Folder for ``checkpoint.pt`` (e.g. ``checkpoint_dir("run")``
            in the cache); None writes none.
        resume: Continue from the checkpoint in ``checkpoint_dir`` when there is one
            (model, optimizer, scheduler, sampler state and history are restored).

    Returns:
        The :class:`TrainHistory`. A non-finite training loss stops training early
        and sets ``history.diverged`` (a diverging baseline is a result, not an error).

    Raises:
        ValueError: On non-positive sizes, token arrays that are not 1-D, too short
            or outside the vocabulary, or ``resume`` without ``checkpoint_dir``.
        TypeError: If a token array does not hold integers.
    """
    steps = _check_positive_int("steps", steps)
    batch_size = _check_positive_int("batch_size", batch_size)
    seq_len = _check_positive_int("seq_len", seq_len)
    eval_every = max(1, steps // 10) if eval_every is None else eval_every
    eval_every = _check_positive_int("eval_every", eval_every)
    if eval_batches is not None:
        eval_batches = _check_positive_int("eval_batches", eval_batches)
    if grad_clip is not None and not grad_clip > 0:
        raise ValueError(f"grad_clip must be positive or None, got {grad_clip!r}")
    if resume and checkpoint_dir is None:
        raise ValueError("resume=True needs checkpoint_dir")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a nonnegative int, got {seed!r}")

    if device is not None:
        from icml26_core.device import torch_device

        model.to(torch_device(device))
    dev = _model_device(model)
    vocab = _vocab_size(model)
    train = _as_tokens(train_tokens, "train_tokens", seq_len, vocab, dev)
    val = None if val_tokens is None else _as_tokens(val_tokens, "val_tokens", seq_len, vocab, dev)
    if optimizer is None:
        optimizer = default_optimizer(model, lr=lr, weight_decay=weight_decay)
    elif not hasattr(optimizer, "step") and callable(optimizer):
        optimizer = optimizer(model)
    if not (hasattr(optimizer, "step") and hasattr(optimizer, "zero_grad")):
        raise TypeError(
            "optimizer must have step() and zero_grad() (e.g. a torch.optim.Optimizer), or "
            f"be a callable that builds one from the model; got {type(optimizer).__name__}"
        )
    if scheduler is not None and not hasattr(scheduler, "step"):
        if not callable(scheduler):
            raise TypeError(
                "scheduler must have step() or be a callable that builds one from the "
                f"optimizer; got {type(scheduler).__name__}"
            )
        scheduler = scheduler(optimizer)
    loss_scheduler = scheduler is not None and _needs_loss(scheduler)
    generator = torch.Generator().manual_seed(seed)
    history = TrainHistory()
    start = 0
    if resume and checkpoint_dir is not None and (Path(checkpoint_dir) / CHECKPOINT_FILE).is_file():
        saved = load_checkpoint(
            checkpoint_dir, model=model, optimizer=optimizer, scheduler=scheduler
        )
        start = saved["step"]
        generator.set_state(saved["extra"]["generator"])
        history = TrainHistory(**saved["extra"]["history"])

    train_time = history.wall_time[-1] if history.wall_time else 0.0
    recent: list[float] = []

    def record(step: int) -> None:
        val_loss = math.nan
        if val is not None:
            val_loss = evaluate_loss(
                model,
                val,
                batch_size=batch_size,
                seq_len=seq_len,
                max_batches=eval_batches,
                autocast_dtype=autocast_dtype,
            )
        history.step.append(step)
        history.tokens_seen.append(step * batch_size * seq_len)
        history.train_loss.append(float(np.mean(recent)) if recent else math.nan)
        history.val_loss.append(val_loss)
        history.val_perplexity.append(math.exp(min(val_loss, 700.0)))
        history.lr.append(_current_lr(optimizer))
        history.wall_time.append(train_time)
        recent.clear()
        if checkpoint_dir is not None:
            save_checkpoint(
                checkpoint_dir,
                model=model,
                optimizer=optimizer,
                scheduler=scheduler,
                step=step,
                extra={"history": history.as_dict(), "generator": generator.get_state()},
            )

    last: list[Any] = [None]

    def forward_backward(batch: Any) -> Any:
        optimizer.zero_grad(set_to_none=True)
        loss = lm_loss(model, batch, autocast_dtype=autocast_dtype)
        loss.backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        last[0] = loss
        return loss

    model.train()
    if start == 0 and not history.step:
        record(0)
    for step in _progress_iter(progress, range(start, steps)):
        tic = time.perf_counter()
        batch = sample_batch(train, batch_size, seq_len, generator)
        if closure:
            loss = optimizer.step(lambda batch=batch: forward_backward(batch))
            if loss is None:  # an optimizer whose step(closure) returns nothing
                loss = last[0]
        else:
            loss = forward_backward(batch)
            optimizer.step()
        value = float(loss.detach())  # waits for the device, so the time below is honest
        finite = math.isfinite(value)
        if scheduler is not None and finite:
            if loss_scheduler:
                scheduler.step(value)
            else:
                scheduler.step()
        train_time += time.perf_counter() - tic
        history.step_losses.append(value)
        recent.append(value)
        done = step + 1
        if not finite:
            history.diverged = True
            record(done)
            break
        if done % eval_every == 0 or done == steps:
            record(done)
    return history
