"""mergekit as a peer: its own merge methods run on our task vectors, in memory.

:func:`mergekit_merge` hands ``theta_0`` and ``theta_0 + tau_k`` to mergekit's
``mergekit.merge_methods.api.merge_state_dicts`` (mergekit >= 0.1.5, an optional
dependency: ``pip install "opic-merging[repro]"``) and returns the merged tensors, so a
table can put mergekit's TIES / DARE-TIES beside ours on the same task vectors.

Where mergekit 0.1.5 differs from :func:`~opic_merging.ties_merge` and
:func:`~opic_merging.dare_ties_merge` (read from its source, tested in
``tests/test_peers.py``):

- ``ties``: keeps ``max(1, int(density * n))`` entries per tensor (ours:
  ``ceil(density * n)`` and ties at the threshold), multiplies by the per-model
  ``weight`` *before* the sign election (mergekit issue #474; ours scales after), and
  elects ``+`` where the sum is exactly 0 (ours: no sign, the entry is 0). With
  weight 1, an integer ``density * n`` and distinct magnitudes the two are equal.
- ``dare_ties``: drops with ``torch.bernoulli`` on torch's global generator, rescales the
  kept entries so that the tensor's L1 norm is unchanged (ours: divides by ``density``,
  unbiased per entry) and, by default (``normalize=False``), *sums* the agreeing
  entries instead of averaging them. At density 1 and ``normalize=True`` it equals ours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from icml26_core.validation import check_int

from opic_merging.vectors import TaskVector, _check_vectors

__all__ = ["MERGEKIT_METHODS", "mergekit_merge"]

#: The mergekit methods :func:`mergekit_merge` accepts (base-model task-vector methods).
MERGEKIT_METHODS = ("task_arithmetic", "ties", "dare_ties", "dare_linear", "breadcrumbs_ties")


def mergekit_merge(
    base: Any,
    task_vectors: Sequence[TaskVector],
    method: str,
    *,
    seed: int | None = 0,
    **parameters: Any,
) -> dict[str, torch.Tensor]:
    """Merge ``base + tau_k`` with mergekit's implementation of ``method``.

    Args:
        base: ``theta_0``: a state dict (``name -> tensor``) or a ``torch.nn.Module``;
            only the tensors the task vectors change are merged and returned.
        task_vectors: The :class:`~opic_merging.TaskVector` s; model ``k`` is
            ``theta_0 + tau_k`` (a tensor a vector lacks is the base's).
        method: One of :data:`MERGEKIT_METHODS`.
        seed: Seeds torch's global generator before the merge (mergekit's DARE draws its
            masks from it); the generator's state is restored afterwards. None leaves
            it alone.
        **parameters: mergekit's parameters: ``weight`` (a float, or one per task
            vector), ``density``, ``normalize``, ``rescale``, ``lambda``, ... as in a
            mergekit YAML config. ``weight`` defaults to 1.0.

    Returns:
        ``name -> merged tensor`` for every tensor any task vector changes (same shape
        and dtype as the base's).

    Raises:
        ModuleNotFoundError: If mergekit is not installed.
        TypeError: If ``base`` is neither a module nor a state dict, or an element of
            ``task_vectors`` is not a :class:`~opic_merging.TaskVector`.
        ValueError: On an unknown ``method``, an empty task list, a task-vector tensor
            that ``base`` lacks or whose shape differs, or a negative ``seed``.

    Source: mergekit 0.1.5, ``mergekit/merge_methods/api.py`` and
    ``generalized_task_arithmetic.py`` (Goddard et al., 2024).
    """
    if method not in MERGEKIT_METHODS:
        raise ValueError(f"method must be one of {MERGEKIT_METHODS}, got {method!r}")
    tvs = _check_vectors(task_vectors)
    if isinstance(base, torch.nn.Module):
        state = {k: v.detach() for k, v in base.state_dict().items()}
    elif isinstance(base, Mapping):
        state = dict(base)
    else:
        raise TypeError(
            f"base must be a torch.nn.Module or a state dict, got {type(base).__name__}"
        )
    if seed is not None:
        seed = check_int("seed", seed, low=0)
    names = sorted({k for tv in tvs for k in tv.delta})
    for k in names:
        if k not in state:
            raise ValueError(f"a task vector has tensor {k!r} that base lacks")
        for tv in tvs:
            if k in tv.delta and tuple(tv.delta[k].shape) != tuple(state[k].shape):
                raise ValueError(
                    f"task vector {tv.name!r} tensor {k!r} has shape "
                    f"{tuple(tv.delta[k].shape)}, base has {tuple(state[k].shape)}"
                )
    try:
        from mergekit.merge_methods.api import merge_state_dicts
    except ModuleNotFoundError as err:  # pragma: no cover - depends on the install
        raise ModuleNotFoundError(
            "mergekit_merge needs mergekit >= 0.1.5: pip install 'opic-merging[repro]'"
        ) from err
    base_sd = {k: state[k].detach().cpu() for k in names}
    models: dict[str, dict[str, torch.Tensor]] = {"__base__": base_sd}
    for i, tv in enumerate(tvs):
        key = f"{i}:{tv.name}"
        models[key] = {
            k: base_sd[k] + tv.delta[k].to(base_sd[k]) if k in tv.delta else base_sd[k]
            for k in names
        }
    params = {"weight": 1.0, **parameters}
    rng_state = torch.random.get_rng_state() if seed is not None else None
    try:
        if seed is not None:
            torch.manual_seed(seed)
        with torch.no_grad():
            out = merge_state_dicts(models, method, base="__base__", parameters=params)
    finally:
        if rng_state is not None:
            torch.random.set_rng_state(rng_state)
    return {k: out[k] for k in names}
