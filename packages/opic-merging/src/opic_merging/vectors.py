"""Task vectors, coefficient groups and the merges built on them (task arithmetic, TIES, DARE).

A task vector is ``tau_k = theta_k - theta_0`` (Ilharco et al., 2023): the change that
fine-tuning made to the base weights ``theta_0``. A merge adds a weighted sum of task
vectors back: ``theta = theta_0 + sum_k lambda_{k,g} tau_k``, where ``g`` is the group
of the tensor (one group for the whole model at ``"task"`` granularity, one per decoder
layer at ``"layer"``, attention / MLP of each layer at ``"module"``).

Everything here works on state dicts (``name -> torch.Tensor``) or on any
``torch.nn.Module`` (``state_dict()`` is read), so it serves any ``transformers``
causal LM.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_choice, check_float, check_int

__all__ = [
    "GRANULARITIES",
    "TaskVector",
    "dare",
    "dare_ties_merge",
    "group_names",
    "merge",
    "parameter_groups",
    "ties_merge",
]

GRANULARITIES = ("task", "layer", "module")
_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_ATTN = ("self_attn", "input_layernorm", "attention")
_MLP = ("mlp", "post_attention_layernorm", "feed_forward")


def _state(obj: Any, name: str) -> dict[str, Any]:
    """A state dict from a module or a mapping (tensors detached, not copied)."""
    if isinstance(obj, torch.nn.Module):
        return {k: v.detach() for k, v in obj.state_dict().items()}
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if not isinstance(v, torch.Tensor):
                raise TypeError(f"{name}[{k!r}] must be a torch.Tensor, got {type(v).__name__}")
        return dict(obj)
    raise TypeError(f"{name} must be a torch.nn.Module or a state dict, got {type(obj).__name__}")


def _check_finite(name: str, key: str, t: Any) -> None:
    if t.is_floating_point() and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name}[{key!r}] has NaN or inf values")


@dataclass
class TaskVector:
    """``theta_task - theta_0`` on the tensors that fine-tuning changed.

    Attributes:
        delta: ``name -> tensor`` (float, the base's shape and dtype) for each
            changed tensor; tensors absent here are unchanged (a zero delta).
        name: Optional label (the task's name).

    Example:
        >>> import torch
        >>> base = {"w": torch.zeros(2), "b": torch.ones(1)}
        >>> tuned = {"w": torch.tensor([1.0, -2.0]), "b": torch.ones(1)}
        >>> tv = TaskVector.from_models(base, tuned, name="t")
        >>> sorted(tv.delta), tv.delta["w"].tolist()
        (['w'], [1.0, -2.0])
    """

    delta: dict[str, Any]
    name: str | None = None

    @classmethod
    def from_models(
        cls, base: Any, finetuned: Any, *, name: str | None = None, keep_zero: bool = False
    ) -> TaskVector:
        """The task vector of ``finetuned`` relative to ``base``.

        Args:
            base: The base model ``theta_0``: a ``torch.nn.Module`` or a state dict.
            finetuned: A model fine-tuned from ``base``, same architecture (same keys,
                shapes and dtypes).
            name: Label of the task.
            keep_zero: Keep tensors whose delta is exactly zero (default: drop them,
                so a top-K fine-tune stores only its K layers).

        Returns:
            The :class:`TaskVector` (CPU tensors).

        Raises:
            TypeError: If either argument is neither a module nor a state dict.
            ValueError: On different keys, shapes or dtypes, NaN/inf weights, or a
                non-float tensor that differs.
        """
        b, f = _state(base, "base"), _state(finetuned, "finetuned")
        missing, extra = sorted(set(b) - set(f)), sorted(set(f) - set(b))
        if missing or extra:
            raise ValueError(
                f"finetuned does not match base's architecture: missing keys {missing[:5]}, "
                f"extra keys {extra[:5]}"
            )
        delta = {}
        for key, tb in b.items():
            tf = f[key]
            if tuple(tf.shape) != tuple(tb.shape):
                raise ValueError(
                    f"finetuned[{key!r}] has shape {tuple(tf.shape)}, base has {tuple(tb.shape)}"
                )
            if tf.dtype != tb.dtype:
                raise ValueError(f"finetuned[{key!r}] has dtype {tf.dtype}, base has {tb.dtype}")
            _check_finite("base", key, tb)
            _check_finite("finetuned", key, tf)
            if not tb.is_floating_point():
                if not torch.equal(tb, tf):
                    raise ValueError(f"non-float tensor {key!r} differs between base and finetuned")
                continue
            d = tf.detach().cpu() - tb.detach().cpu()
            if keep_zero or bool(d.any()):
                delta[key] = d
        return cls(delta, name)

    @classmethod
    def from_task_models(cls, task_models: Any, task: str) -> TaskVector:
        """The task vector of one task of ``icml26_core.lm.TaskModels``."""
        return cls(dict(task_models.task_vector(task)), task)

    @property
    def names(self) -> tuple[str, ...]:
        """Names of the changed tensors, sorted."""
        return tuple(sorted(self.delta))

    def norm(self) -> float:
        """Euclidean norm over all changed entries."""
        return math.sqrt(sum(float(v.double().pow(2).sum()) for v in self.delta.values()))

    def __mul__(self, scale: float) -> TaskVector:
        if not isinstance(scale, int | float | np.integer | np.floating) or isinstance(scale, bool):
            return NotImplemented
        scale = check_float("scale", scale)
        return TaskVector({k: v * scale for k, v in self.delta.items()}, self.name)

    __rmul__ = __mul__

    def __neg__(self) -> TaskVector:
        return self * -1.0

    def __add__(self, other: TaskVector) -> TaskVector:
        if not isinstance(other, TaskVector):
            return NotImplemented
        out = {k: v.clone() for k, v in self.delta.items()}
        for k, v in other.delta.items():
            if k in out and (out[k].shape != v.shape or out[k].dtype != v.dtype):
                raise ValueError(
                    f"cannot add task vectors: {k!r} has shape {tuple(out[k].shape)} "
                    f"({out[k].dtype}) and {tuple(v.shape)} ({v.dtype})"
                )
            out[k] = out[k] + v if k in out else v.clone()
        return TaskVector(out)

    def apply_to(self, base: Any, scale: float = 1.0) -> Any:
        """``base + scale * tau`` (a new module or state dict, as ``base`` is)."""
        return merge(base, [self], [scale])


def parameter_groups(names: Sequence[str], granularity: str) -> list[str]:
    """The coefficient group of each tensor name.

    ``"task"``: one group ``"all"``. ``"layer"``: ``"layer<i>"`` for tensors under
    ``layers.<i>.``, ``"other"`` for the rest (embeddings, final norm, head).
    ``"module"``: ``"layer<i>.attn"`` (self-attention and its input norm) or
    ``"layer<i>.mlp"`` (MLP and the post-attention norm), ``"other"`` elsewhere.

    Raises:
        ValueError: On an unknown ``granularity``.
    """
    granularity = check_choice("granularity", granularity, GRANULARITIES)
    out = []
    for n in names:
        if granularity == "task":
            out.append("all")
            continue
        m = _LAYER.search(n)
        if m is None:
            out.append("other")
            continue
        layer = f"layer{int(m.group(1))}"
        if granularity == "layer":
            out.append(layer)
        elif any(f".{p}" in n for p in _MLP):  # first: post_attention_layernorm is MLP's
            out.append(f"{layer}.mlp")
        elif any(f".{p}" in n for p in _ATTN):
            out.append(f"{layer}.attn")
        else:
            out.append(f"{layer}.other")
    return out


def _group_key(g: str) -> tuple[int, str]:
    m = re.match(r"layer(\d+)", g)
    return (int(m.group(1)) if m else 10**9, g)


def group_names(task_vectors: Sequence[TaskVector], granularity: str) -> tuple[str, ...]:
    """The groups (columns of the coefficient matrix) for these task vectors, in order.

    Layers are ordered by index, ``"other"`` last.

    Raises:
        TypeError: If an element of ``task_vectors`` is not a :class:`TaskVector`.
        ValueError: On an unknown ``granularity``.
    """
    for i, tv in enumerate(task_vectors):
        if not isinstance(tv, TaskVector):
            raise TypeError(f"task_vectors[{i}] must be a TaskVector, got {type(tv).__name__}")
    names = sorted({n for tv in task_vectors for n in tv.delta})
    return tuple(sorted(set(parameter_groups(names, granularity)), key=_group_key))


def _check_vectors(task_vectors: Any) -> list[TaskVector]:
    if isinstance(task_vectors, TaskVector):
        task_vectors = [task_vectors]
    tvs = list(task_vectors) if task_vectors is not None else []
    if not tvs:
        raise ValueError("task_vectors must be a non-empty sequence of TaskVector")
    for i, tv in enumerate(tvs):
        if not isinstance(tv, TaskVector):
            raise TypeError(f"task_vectors[{i}] must be a TaskVector, got {type(tv).__name__}")
    return tvs


def _check_same_shapes(tvs: Sequence[TaskVector]) -> None:
    seen: dict[str, tuple[int, tuple[int, ...], Any]] = {}
    for i, tv in enumerate(tvs):
        for k, v in tv.delta.items():
            if k not in seen:
                seen[k] = (i, tuple(v.shape), v.dtype)
            elif seen[k][1:] != (tuple(v.shape), v.dtype):
                j, shape, dtype = seen[k]
                raise ValueError(
                    f"task_vectors[{i}][{k!r}] has shape {tuple(v.shape)} ({v.dtype}), "
                    f"task_vectors[{j}] has {shape} ({dtype})"
                )


def _coefficient_matrix(coefficients: Any, n_tasks: int, n_groups: int) -> np.ndarray:
    try:
        lam = np.asarray(coefficients, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"coefficients must be numbers of shape ({n_tasks},) or ({n_tasks}, {n_groups}), "
            f"got {type(coefficients).__name__}: {err}"
        ) from None
    if lam.ndim == 1 and lam.shape[0] == n_tasks:
        lam = np.repeat(lam[:, None], n_groups, axis=1)
    if lam.shape != (n_tasks, n_groups):
        raise ValueError(
            f"coefficients must have shape ({n_tasks},) or ({n_tasks}, {n_groups}) "
            f"(tasks x groups), got {lam.shape}"
        )
    if not np.all(np.isfinite(lam)):
        raise ValueError("coefficients must be finite")
    return lam


def merge(base: Any, task_vectors: Any, coefficients: Any, granularity: str = "task") -> Any:
    """``theta_0 + sum_k lambda_{k,g(tensor)} tau_k``: task arithmetic with group coefficients.

    Args:
        base: ``theta_0``: a ``torch.nn.Module`` (a merged deep copy is returned) or a
            state dict (a new state dict is returned; ``base`` is not modified).
        task_vectors: Sequence of ``T`` :class:`TaskVector` (or one).
        coefficients: ``lambda``: shape ``(T,)`` (one per task, every group) or
            ``(T, G)`` with the ``G`` groups of :func:`group_names` at ``granularity``.
        granularity: ``"task"``, ``"layer"`` or ``"module"`` (see
            :func:`parameter_groups`).

    Returns:
        The merged model or state dict (the base's devices and dtypes).

    Raises:
        TypeError: If ``base`` is neither a module nor a state dict, an element of
            ``task_vectors`` is not a :class:`TaskVector`, or ``coefficients`` are not
            numbers.
        ValueError: On an empty task list, a task-vector tensor the base lacks, a shape
            or dtype mismatch, or coefficients of the wrong shape or not finite.
    """
    tvs = _check_vectors(task_vectors)
    groups = group_names(tvs, granularity)
    lam = _coefficient_matrix(coefficients, len(tvs), len(groups))
    col = {g: j for j, g in enumerate(groups)}
    is_module = isinstance(base, torch.nn.Module)
    state = _state(base, "base")
    for i, tv in enumerate(tvs):
        for key, d in tv.delta.items():
            if key not in state:
                raise ValueError(f"task_vectors[{i}] has tensor {key!r} that base lacks")
            if tuple(d.shape) != tuple(state[key].shape):
                raise ValueError(
                    f"task_vectors[{i}][{key!r}] has shape {tuple(d.shape)}, "
                    f"base has {tuple(state[key].shape)}"
                )
            if d.dtype != state[key].dtype:
                raise ValueError(
                    f"task_vectors[{i}][{key!r}] has dtype {d.dtype}, base has {state[key].dtype}"
                )
    keys = sorted({k for tv in tvs for k in tv.delta})
    key_groups = dict(zip(keys, parameter_groups(keys, granularity), strict=True))
    merged: dict[str, Any] = {}
    for key in keys:
        j = col[key_groups[key]]
        acc = state[key].detach().clone()
        for i, tv in enumerate(tvs):
            if key in tv.delta and lam[i, j] != 0.0:
                acc.add_(tv.delta[key].to(acc.device), alpha=float(lam[i, j]))
        merged[key] = acc
    if not is_module:
        out = {k: v.clone() for k, v in state.items()}
        out.update(merged)
        return out
    model = copy.deepcopy(base)
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    with torch.no_grad():
        for key, value in merged.items():
            target = params.get(key, buffers.get(key))
            if target is None:  # e.g. a tied weight listed under its other name
                model.load_state_dict({key: value}, strict=False)
            else:
                target.copy_(value)
    return model


def _disjoint_mean(stacked: Any) -> Any:
    """TIES' elect + disjoint merge of stacked deltas ``(T, ...)``."""
    sign = torch.sign(stacked.sum(dim=0))
    agree = (torch.sign(stacked) == sign) & (stacked != 0)
    count = agree.sum(dim=0).clamp(min=1)
    return (stacked * agree).sum(dim=0) / count


def _trim(d: Any, density: float) -> Any:
    """Keep the ``density`` fraction of largest-magnitude entries of one tensor."""
    k = math.ceil(density * d.numel())
    if k >= d.numel():
        return d.clone()
    flat = d.abs().flatten()
    threshold = torch.topk(flat, k, largest=True, sorted=False).values.min()
    return torch.where(d.abs() >= threshold, d, torch.zeros_like(d))


def ties_merge(task_vectors: Any, density: float = 0.2) -> TaskVector:
    """TIES-Merging (Yadav et al., 2023): trim, elect sign, disjoint mean.

    Each task vector keeps its top ``density`` fraction of entries by magnitude (per
    tensor, as mergekit does); the elected sign of each entry is the sign of the sum of
    the trimmed values; the merged entry is the mean of the trimmed values that agree
    with it. Scale the result with :meth:`TaskVector.apply_to` (the paper's lambda).
    Unlike mergekit's ``ties``, no per-model weight rescales values before the sign
    election (mergekit issue #474): weights, if wanted, scale the result.

    Args:
        task_vectors: Sequence of :class:`TaskVector`.
        density: Fraction of entries kept per tensor, in (0, 1].

    Returns:
        The merged task vector.

    Raises:
        TypeError: If an element of ``task_vectors`` is not a :class:`TaskVector`.
        ValueError: On an empty list, a density outside (0, 1], or task vectors whose
            tensors of one name differ in shape or dtype.
    """
    tvs = _check_vectors(task_vectors)
    _check_same_shapes(tvs)
    density = check_float("density", density, low=0.0, high=1.0, low_inclusive=False)
    keys = sorted({k for tv in tvs for k in tv.delta})
    out = {}
    for key in keys:
        ref = next(tv.delta[key] for tv in tvs if key in tv.delta)
        stacked = torch.stack(
            [
                _trim(tv.delta[key], density) if key in tv.delta else torch.zeros_like(ref)
                for tv in tvs
            ]
        )
        out[key] = _disjoint_mean(stacked)
    return TaskVector(out, "ties")


def dare(task_vector: TaskVector, density: float, *, seed: int = 0) -> TaskVector:
    """DARE (Yu et al., 2024): drop each entry with probability ``1 - density``, rescale.

    Kept entries are divided by ``density`` so that the expectation is unchanged.

    Args:
        task_vector: One :class:`TaskVector`.
        density: Keep probability, in (0, 1].
        seed: Seed of the drop mask (an integer >= 0).

    Returns:
        The dropped and rescaled task vector (same tensor names, shapes and dtypes).

    Raises:
        TypeError: If ``task_vector`` is not a :class:`TaskVector` or ``seed`` is not
            an integer.
        ValueError: On a density outside (0, 1] or a negative seed.
    """
    if not isinstance(task_vector, TaskVector):
        raise TypeError(f"task_vector must be a TaskVector, got {type(task_vector).__name__}")
    seed = check_int("seed", seed, low=0)
    density = check_float("density", density, low=0.0, high=1.0, low_inclusive=False)
    gen = torch.Generator().manual_seed(int(seed))
    out = {}
    for key in sorted(task_vector.delta):
        d = task_vector.delta[key]
        keep = torch.rand(d.shape, generator=gen) < density
        out[key] = torch.where(keep, d / density, torch.zeros_like(d))
    return TaskVector(out, task_vector.name)


def dare_ties_merge(task_vectors: Any, density: float = 0.5, *, seed: int = 0) -> TaskVector:
    """DARE then TIES' sign election and disjoint mean (mergekit's ``dare_ties``).

    Args:
        task_vectors: Sequence of :class:`TaskVector`.
        density: DARE's keep probability, in (0, 1].
        seed: Seed of the drop masks (task ``i`` uses ``seed + i``).

    Returns:
        The merged task vector.

    Raises:
        TypeError: If an element is not a :class:`TaskVector` or ``seed`` is not an integer.
        ValueError: On an empty list, a density outside (0, 1], a negative seed, or
            task vectors whose tensors of one name differ in shape or dtype.
    """
    tvs = _check_vectors(task_vectors)
    _check_same_shapes(tvs)
    seed = check_int("seed", seed, low=0)
    density = check_float("density", density, low=0.0, high=1.0, low_inclusive=False)
    dropped = [dare(tv, density, seed=seed + i) for i, tv in enumerate(tvs)]
    keys = sorted({k for tv in dropped for k in tv.delta})
    out = {}
    for key in keys:
        ref = next(tv.delta[key] for tv in dropped if key in tv.delta)
        stacked = torch.stack([tv.delta.get(key, torch.zeros_like(ref)) for tv in dropped])
        out[key] = _disjoint_mean(stacked)
    return TaskVector(out, "dare_ties")
