r"""OPIC: evolutionary merging with in-context-learning preservation as the objective.

Our design where the abstract is silent (see the README):

1. Self-generated data, no labels. For each task ``k`` with instruction ``I_k``, the
   base model samples pseudo-inputs from the prompt ``"{I_k}\nInput:"`` (or they come
   from an unlabeled pool the caller gives), and the task model ``theta_0 + tau_k``
   labels each input greedily from ``"{I_k}\nInput: {x}\nOutput:"``.
2. ICL objective. From those pairs, ``n_queries`` k-shot prompts per task:
   the instruction, ``n_shots`` demonstrations ``"Input: x\nOutput: y\n"`` and a
   query; the fitness of a merge is the mean over tasks of the mean per-token
   log-likelihood of the task model's answers to the queries.
3. Hierarchical refinement. Coefficients ``lambda`` are optimized at the coarsest
   level first (one per task), then each is split into layer groups, then into
   attention / MLP modules; each level starts from its parent's best point (which is
   a point of the finer space with the same merge), evaluated first, so the best
   fitness never drops when a level starts.
4. Optimizer: CMA-ES (``cma``) or a simple Gaussian GA, a fixed evaluation budget
   split evenly over the levels, coefficients bounded to ``bounds``.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_choice, check_float, check_int

from opic_merging._lm import CachedScorer, generate
from opic_merging.vectors import (
    GRANULARITIES,
    TaskVector,
    _check_vectors,
    _coefficient_matrix,
    group_names,
    merge,
    parameter_groups,
)

__all__ = ["OPIC", "as_task_vectors", "from_mergekit_config", "mergekit_config"]


def as_task_vectors(base: Any, task_models: Any) -> tuple[tuple[str, ...], list[TaskVector]]:
    """Task names and vectors from models, state dicts, task vectors or core ``TaskModels``.

    Args:
        base: The base model (module or state dict).
        task_models: ``name -> model | state dict | TaskVector``, or an
            ``icml26_core.lm.TaskModels``.

    Raises:
        ValueError: If there are no task models, or one does not match ``base``.
        TypeError: On an unsupported type.
    """
    if hasattr(task_models, "task_vector") and hasattr(task_models, "tasks"):
        names = tuple(task_models.tasks)
        return names, [TaskVector.from_task_models(task_models, t) for t in names]
    if not isinstance(task_models, Mapping) or not task_models:
        raise ValueError("task_models must be a non-empty mapping name -> model (or TaskModels)")
    names, tvs = [], []
    for name, m in task_models.items():
        tv = m if isinstance(m, TaskVector) else TaskVector.from_models(base, m, name=str(name))
        names.append(str(name))
        tvs.append(TaskVector(tv.delta, str(name)))
    return tuple(names), tvs


def mergekit_config(
    task_vectors: Sequence[TaskVector],
    coefficients: Any,
    granularity: str = "task",
    *,
    base_model: str = "base",
    model_paths: Sequence[str] | None = None,
    dtype: str = "float32",
) -> dict[str, Any]:
    """A mergekit ``task_arithmetic`` configuration (a dict; dump it as YAML) of a merge.

    Scalar weights at ``"task"`` granularity; finer coefficients become mergekit's
    conditional parameter lists ``[{"filter": tensor name, "value": w}, ..., {"value":
    0.0}]`` (mergekit matches a filter as a substring of the tensor name; each filter
    is a full tensor name here, so exactly one matches).

    Args:
        task_vectors: The merged task vectors (their tensor names are the filters).
        coefficients: Shape ``(T,)`` or ``(T, G)`` as for :func:`merge`.
        granularity: The coefficients' granularity.
        base_model: Path or hub name of the base model in the config.
        model_paths: One path per task model (default: each task vector's name).
        dtype: mergekit's ``dtype``.

    Returns:
        The config: ``merge_method``, ``base_model``, ``models`` (one entry per task
        vector), ``parameters`` and ``dtype``.

    Raises:
        TypeError: If an element of ``task_vectors`` is not a :class:`TaskVector` or
            ``coefficients`` are not numbers.
        ValueError: On an empty task list, an unknown granularity, coefficients of the
            wrong shape or not finite, or a ``model_paths`` of the wrong length.
    """
    task_vectors = _check_vectors(task_vectors)
    groups = group_names(task_vectors, granularity)
    lam = _coefficient_matrix(coefficients, len(task_vectors), len(groups))
    paths = (
        list(model_paths)
        if model_paths is not None
        else [tv.name or f"task{i}" for i, tv in enumerate(task_vectors)]
    )
    if len(paths) != len(task_vectors):
        raise ValueError("model_paths must have one path per task vector")
    col = {g: j for j, g in enumerate(groups)}
    models = []
    for i, (tv, path) in enumerate(zip(task_vectors, paths, strict=True)):
        if granularity == "task":
            weight: Any = float(lam[i, 0])
        else:
            keys = sorted(tv.delta)
            weight = [
                {"filter": k, "value": float(lam[i, col[g]])}
                for k, g in zip(keys, parameter_groups(keys, granularity), strict=True)
            ] + [{"value": 0.0}]
        models.append({"model": path, "parameters": {"weight": weight}})
    return {
        "merge_method": "task_arithmetic",
        "base_model": base_model,
        "models": models,
        "parameters": {"normalize": False},
        "dtype": dtype,
    }


def _weight_for(weight: Any, name: str) -> float:
    if not isinstance(weight, list):
        return float(weight)
    for entry in weight:
        flt = entry.get("filter")
        if flt is None or flt in name:
            return float(entry["value"])
    return 0.0


def from_mergekit_config(
    config: Mapping[str, Any], base: Any, task_vectors: Sequence[TaskVector]
) -> Any:
    """Apply a ``task_arithmetic`` config from :func:`mergekit_config` to ``base``.

    Interprets the weights as mergekit does (first matching filter, else the default
    entry): ``theta_0 + sum_k w_k(tensor) tau_k``. Returns a state dict.

    Raises:
        TypeError: If ``config`` is not a mapping, ``base`` is neither a module nor a
            state dict, or an element of ``task_vectors`` is not a :class:`TaskVector`.
        ValueError: If the method is not ``task_arithmetic``, the model count differs,
            or a task vector changes a tensor that ``base`` lacks.
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping (a parsed YAML), got {type(config).__name__}")
    task_vectors = _check_vectors(task_vectors)
    if not isinstance(base, torch.nn.Module | Mapping):
        raise TypeError(
            f"base must be a torch.nn.Module or a state dict, got {type(base).__name__}"
        )
    if config.get("merge_method") != "task_arithmetic":
        raise ValueError("config's merge_method must be 'task_arithmetic'")
    models = list(config.get("models", []))
    if len(models) != len(task_vectors):
        raise ValueError(f"config has {len(models)} models, got {len(task_vectors)} task vectors")
    state = {
        k: v.detach().clone()
        for k, v in (base.state_dict() if isinstance(base, torch.nn.Module) else base).items()
    }
    for entry, tv in zip(models, task_vectors, strict=True):
        weight = entry.get("parameters", {}).get("weight", 1.0)
        for key, d in tv.delta.items():
            if key not in state:
                raise ValueError(f"a task vector has tensor {key!r} that base lacks")
            state[key] = state[key] + _weight_for(weight, key) * d.to(state[key].device)
    return state


class _GA:
    """A (mu + lambda) Gaussian-mutation genetic algorithm with cma's ask/tell interface."""

    def __init__(
        self, x0: np.ndarray, sigma: float, bounds: tuple[float, float], popsize: int, seed: int
    ):
        self.rng = np.random.default_rng(seed)
        self.sigma, self.bounds, self.popsize = sigma, bounds, popsize
        self.parents = [(math.inf, np.asarray(x0, dtype=float))]

    def ask(self) -> list[np.ndarray]:
        out = []
        for _ in range(self.popsize):
            i = self.rng.integers(len(self.parents))
            j = self.rng.integers(len(self.parents))
            a, b = self.parents[i][1], self.parents[j][1]
            mask = self.rng.random(a.shape) < 0.5
            child = np.where(mask, a, b) + self.sigma * self.rng.standard_normal(a.shape)
            out.append(np.clip(child, *self.bounds))
        return out

    def tell(self, xs: Sequence[np.ndarray], losses: Sequence[float]) -> None:
        pool = self.parents + [(float(f), np.asarray(x)) for x, f in zip(xs, losses, strict=True)]
        pool.sort(key=lambda t: t[0])
        self.parents = pool[: max(2, self.popsize // 2)]


class OPIC:
    """Validation-free evolutionary merging with an in-context-learning objective.

    Args:
        base: The base causal LM ``theta_0`` (a ``transformers`` model; Llama-style
            ``model.model.layers`` for the cached fast path and layer groups).
        task_models: ``name -> fine-tuned model | state dict | TaskVector``, or the
            core's ``TaskModels``; all fine-tuned from ``base``.
        tokenizer: ``encode(str) -> list[int]``, ``decode(ids) -> str`` (and
            optionally ``eos_token_id``, ``pad_token_id``).
        n_shots: Demonstrations per k-shot prompt.
        levels: Granularities to optimize in order, coarse to fine (a subsequence of
            ``("task", "layer", "module")``).
        budget: Fitness evaluations in total (split evenly over ``levels``) or one
            count per level.
        n_pseudo: Self-generated (input, output) pairs per task.
        n_queries: k-shot prompts per task in the fitness.
        init: Starting coefficient of every task at the first level.
        sigma: CMA-ES initial step size (GA mutation scale).
        bounds: Coefficient range.
        optimizer: ``"cma"`` or ``"ga"``.
        max_new_tokens: Longest generated input and label (tokens).
        seed: Seed of the sampling, the prompt assembly and the optimizer.
        device: Where to run (default: the base's device).

    Attributes (after :meth:`fit`):
        coefficients_: ``(T, G)`` array at the last level's groups ``groups_``.
        granularity_: The last level.
        fitness_: Best fitness (mean per-token log-likelihood, nats; higher is better).
        history_: One dict per evaluation: ``level``, ``fitness``, ``best``.
        pseudo_data_: ``task -> [(input, output), ...]`` self-generated pairs.
        n_labeled_items_: Labeled items read: always 0 (:meth:`fit` takes no labels).

    Example: see the package README.
    """

    def __init__(
        self,
        base: Any,
        task_models: Any,
        tokenizer: Any,
        *,
        n_shots: int = 4,
        levels: Sequence[str] = ("task", "layer", "module"),
        budget: int | Sequence[int] = 60,
        n_pseudo: int = 12,
        n_queries: int = 8,
        init: float = 0.5,
        sigma: float = 0.2,
        bounds: tuple[float, float] = (0.0, 1.5),
        optimizer: str = "cma",
        max_new_tokens: int = 8,
        seed: int = 0,
        device: Any = None,
    ) -> None:
        if not isinstance(base, torch.nn.Module):
            raise TypeError(f"base must be a torch.nn.Module, got {type(base).__name__}")
        self.base = base
        self.tasks, self.task_vectors = as_task_vectors(base, task_models)
        if tokenizer is None or not hasattr(tokenizer, "encode"):
            raise TypeError("tokenizer must have encode(str) and decode(ids)")
        self.tokenizer = tokenizer
        self.n_shots = check_int("n_shots", n_shots, low=0)
        levels = (levels,) if isinstance(levels, str) else tuple(levels)
        if not levels:
            raise ValueError("levels must name at least one granularity")
        for lv in levels:
            check_choice("levels", lv, GRANULARITIES)
        order = [GRANULARITIES.index(lv) for lv in levels]
        if order != sorted(set(order)):
            raise ValueError(f"levels must go coarse to fine without repeats, got {levels}")
        self.levels = levels
        if isinstance(budget, int | np.integer):
            total = check_int("budget", int(budget), low=len(levels))
            self.budgets = [total // len(levels)] * len(levels)
        else:
            if isinstance(budget, str) or not isinstance(budget, Sequence):
                raise TypeError(f"budget must be an int or one int per level, got {budget!r}")
            self.budgets = [check_int("budget", b, low=1) for b in budget]
            if len(self.budgets) != len(levels):
                raise ValueError("budget must be an int or one count per level")
        self.n_pseudo = check_int("n_pseudo", n_pseudo, low=self.n_shots + 1)
        self.n_queries = check_int("n_queries", n_queries, low=1)
        self.init = check_float("init", init)
        self.sigma = check_float("sigma", sigma, low=0.0, low_inclusive=False)
        if isinstance(bounds, str) or not isinstance(bounds, Sequence) or len(bounds) != 2:
            raise TypeError(f"bounds must be a pair (low, high), got {bounds!r}")
        lo, hi = (check_float("bounds", b) for b in bounds)
        if not lo < hi:
            raise ValueError(f"bounds must be (low, high) with low < high, got {bounds}")
        self.bounds = (lo, hi)
        self.optimizer = check_choice("optimizer", optimizer, ("cma", "ga"))
        self.max_new_tokens = check_int("max_new_tokens", max_new_tokens, low=1)
        self.seed = check_int("seed", seed, low=0)
        self.device = device
        self._names = sorted({n for tv in self.task_vectors for n in tv.delta})
        base_params = dict(base.named_parameters())
        missing = [n for n in self._names if n not in base_params]
        if missing:
            raise ValueError(
                f"task vectors change tensors that are not base parameters: {missing[:5]}"
            )
        self._base = {n: base_params[n].detach().cpu().clone() for n in self._names}
        self._scorer: CachedScorer | None = None
        self.n_labeled_items_ = 0

    # -- self-generated data -------------------------------------------------------
    def task_model(self, task: str) -> Any:
        """``theta_0 + tau_task`` as a new model."""
        if task not in self.tasks:
            raise ValueError(f"unknown task {task!r}; tasks: {', '.join(self.tasks)}")
        onehot = np.array([1.0 if t == task else 0.0 for t in self.tasks])
        return merge(self.base, self.task_vectors, onehot)

    def _pseudo_inputs(
        self, task: str, instruction: str, pool: Sequence[str] | None, rng: Any
    ) -> list[str]:
        if pool is not None:
            items = [str(x) for x in pool if str(x).strip()]
            if len(items) < self.n_shots + 1:
                raise ValueError(
                    f"inputs[{task!r}] needs at least n_shots + 1 = {self.n_shots + 1} items"
                )
            pick = rng.choice(len(items), size=min(self.n_pseudo, len(items)), replace=False)
            return [items[i] for i in pick]
        found: list[str] = []
        for attempt in range(4):
            prompts = [f"{instruction}\nInput:"] * (2 * self.n_pseudo)
            outs = generate(
                self.base,
                self.tokenizer,
                prompts,
                max_new_tokens=self.max_new_tokens,
                sample=True,
                seed=self.seed + 1000 * attempt + zlib.crc32(task.encode()) % 997,
                device=self.device,
            )
            for o in outs:
                if o and o not in found:
                    found.append(o)
            if len(found) >= self.n_pseudo:
                break
        if len(found) < self.n_shots + 1:
            raise RuntimeError(
                f"the base model generated too few distinct inputs for task {task!r}"
            )
        return found[: self.n_pseudo]

    def _self_generate(
        self, task_instructions: Mapping[str, str], inputs: Any
    ) -> dict[str, list[tuple[str, str]]]:
        rng = np.random.default_rng(self.seed)
        data = {}
        for task in self.tasks:
            instr = task_instructions[task]
            pool = None if inputs is None else inputs.get(task)
            xs = self._pseudo_inputs(task, instr, pool, rng)
            model = self.task_model(task)
            ys = generate(
                model,
                self.tokenizer,
                [f"{instr}\nInput: {x}\nOutput:" for x in xs],
                max_new_tokens=self.max_new_tokens,
                device=self.device,
            )
            del model
            pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if y]
            if len(pairs) < self.n_shots + 1:
                raise RuntimeError(f"task model {task!r} labeled too few pseudo-inputs")
            data[task] = pairs
        return data

    def _icl_pairs(self, task_instructions: Mapping[str, str]) -> list[tuple[str, str]]:
        rng = np.random.default_rng(self.seed + 1)
        out = []
        for task in self.tasks:
            pairs = self.pseudo_data_[task]
            for q in range(self.n_queries):
                qi = q % len(pairs)
                others = [i for i in range(len(pairs)) if i != qi]
                shots = rng.choice(others, size=self.n_shots, replace=False) if self.n_shots else []
                demo = "".join(f"Input: {pairs[i][0]}\nOutput: {pairs[i][1]}\n" for i in shots)
                out.append(
                    (
                        f"{task_instructions[task]}\n{demo}Input: {pairs[qi][0]}\nOutput:",
                        " " + pairs[qi][1],
                    )
                )
        return out

    # -- fitness --------------------------------------------------------------------
    def weights(self, coefficients: Any, granularity: str) -> dict[str, Any]:
        """The merged tensors ``theta_0 + sum_k lambda_{k,g} tau_k`` (changed ones only)."""
        groups = group_names(self.task_vectors, granularity)
        lam = np.asarray(coefficients, dtype=float).reshape(len(self.tasks), -1)
        if lam.shape[1] == 1 and len(groups) > 1:
            lam = np.repeat(lam, len(groups), axis=1)
        if lam.shape[1] != len(groups):
            raise ValueError(f"coefficients need {len(groups)} groups at {granularity!r}")
        col = {g: j for j, g in enumerate(groups)}
        out = {}
        for n, g in zip(self._names, parameter_groups(self._names, granularity), strict=True):
            acc = self._base[n].clone()
            for i, tv in enumerate(self.task_vectors):
                if n in tv.delta:
                    acc.add_(tv.delta[n], alpha=float(lam[i, col[g]]))
            out[n] = acc
        return out

    def icl_score(self, weights: Mapping[str, Any]) -> float:
        """The ICL objective of merged tensors ``weights`` (after :meth:`fit` built the data)."""
        if self._scorer is None:
            raise RuntimeError(
                "call fit() first: the ICL prompts are built from self-generated data"
            )
        res = self._scorer.score(weights)
        per_task = res["mean_logprob"].reshape(len(self.tasks), self.n_queries).mean(axis=1)
        return float(per_task.mean())

    def _expand(self, lam: np.ndarray, parent: str, child: str) -> np.ndarray:
        pg = {g: j for j, g in enumerate(group_names(self.task_vectors, parent))}
        cg = group_names(self.task_vectors, child)
        pmap = dict(zip(self._names, parameter_groups(self._names, parent), strict=True))
        cmap = dict(zip(self._names, parameter_groups(self._names, child), strict=True))
        first = {}
        for n in self._names:
            first.setdefault(cmap[n], pmap[n])
        return np.stack([lam[:, pg[first[g]]] for g in cg], axis=1)

    def fit(
        self,
        task_instructions: Mapping[str, str],
        inputs: Mapping[str, Sequence[str]] | None = None,
    ) -> OPIC:
        """Self-generate the ICL data and optimize the coefficients level by level.

        Args:
            task_instructions: ``task -> instruction`` (one line saying what the task
                is), one per task model.
            inputs: Optional unlabeled pool of inputs per task (strings) to draw the
                pseudo-inputs from instead of sampling them from the base model. No
                labels: every output used comes from a task model.

        Returns:
            ``self``.

        Raises:
            ValueError: If the instructions do not name exactly the tasks.
            TypeError: If an instruction is not a string or ``inputs`` is not a mapping.
            RuntimeError: If the base model generates, or a task model labels, fewer
                than ``n_shots + 1`` distinct items for a task.
        """
        if not isinstance(task_instructions, Mapping) or set(task_instructions) != set(self.tasks):
            raise ValueError(
                f"task_instructions must map exactly the tasks {self.tasks} to strings"
            )
        for task, instr in task_instructions.items():
            if not isinstance(instr, str):
                raise TypeError(
                    f"task_instructions[{task!r}] must be a str, got {type(instr).__name__}"
                )
        if inputs is not None and not isinstance(inputs, Mapping):
            raise TypeError("inputs must be a mapping task -> sequence of str, or None")
        self.pseudo_data_ = self._self_generate(task_instructions, inputs)
        pairs = self._icl_pairs(task_instructions)
        self._scorer = CachedScorer(
            self.base, self.tokenizer, pairs, self._names, device=self.device
        )
        return self.search(self.icl_score)

    def search(self, objective: Callable[[dict[str, Any]], float]) -> OPIC:
        """The hierarchical evolutionary search on any objective (higher is better).

        :meth:`fit` calls it with :meth:`icl_score`; other objectives (e.g. an
        entropy on unlabeled inputs, as AdaMerging minimizes) reuse the same levels,
        budget and optimizer, so the objective alone differs.

        Args:
            objective: ``merged tensors (name -> tensor) -> float``.

        Returns:
            ``self``, with ``coefficients_``, ``fitness_``, ``history_`` set.

        Raises:
            TypeError: If ``objective`` is not callable.
        """
        if not callable(objective):
            raise TypeError(f"objective must be callable, got {type(objective).__name__}")
        self.history_: list[dict[str, Any]] = []
        best_f, best_lam, best_level = -math.inf, None, None
        lam = np.full((len(self.tasks), 1), self.init)
        parent = "task"
        for li, (level, budget) in enumerate(zip(self.levels, self.budgets, strict=True)):
            lam = (
                self._expand(lam, parent, level)
                if li
                else np.repeat(lam, len(group_names(self.task_vectors, level)), axis=1)
            )
            shape = lam.shape
            evals = 0

            def f(x: np.ndarray, level: str = level, shape: tuple[int, ...] = shape) -> float:
                return objective(self.weights(np.asarray(x).reshape(shape), level))

            x0 = lam.ravel().copy()
            f0 = f(x0)
            evals += 1
            if f0 > best_f:
                best_f, best_lam, best_level = f0, x0.reshape(shape).copy(), level
            self.history_.append({"level": level, "fitness": f0, "best": best_f})
            level_best, level_x = f0, x0
            popsize = 4 + int(3 * math.log(x0.size))
            if self.optimizer == "cma":
                import cma

                es: Any = cma.CMAEvolutionStrategy(
                    x0,
                    self.sigma,
                    {
                        "bounds": list(self.bounds),
                        "seed": self.seed + 1 + li,
                        "verbose": -9,
                        "popsize": popsize,
                    },
                )
            else:
                es = _GA(x0, self.sigma, self.bounds, popsize, self.seed + li)
            while evals + popsize <= budget:
                xs = es.ask()
                losses = []
                for x in xs:
                    fx = f(x)
                    evals += 1
                    losses.append(-fx)
                    if fx > best_f:
                        best_f, best_lam, best_level = (
                            fx,
                            np.asarray(x).reshape(shape).copy(),
                            level,
                        )
                    if fx > level_best:
                        level_best, level_x = fx, np.asarray(x)
                    self.history_.append({"level": level, "fitness": fx, "best": best_f})
                es.tell(xs, losses)
            lam = np.asarray(level_x).reshape(shape)
            parent = level
        # the best point overall, expressed at the finest level
        assert best_lam is not None and best_level is not None
        final = best_lam
        for lv in self.levels[self.levels.index(best_level) + 1 :]:
            final = self._expand(final, best_level, lv)
            best_level = lv
        self.granularity_ = self.levels[-1]
        self.groups_ = group_names(self.task_vectors, self.granularity_)
        self.coefficients_ = final
        self.fitness_ = best_f
        self.n_evaluations_ = len(self.history_)
        return self

    def merged_model(self) -> Any:
        """The base with the fitted merge (a new model)."""
        self._fitted()
        return merge(self.base, self.task_vectors, self.coefficients_, self.granularity_)

    def to_mergekit_config(
        self, base_model: str = "base", model_paths: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """The fitted merge as a mergekit ``task_arithmetic`` config (:func:`mergekit_config`)."""
        self._fitted()
        return mergekit_config(
            self.task_vectors,
            self.coefficients_,
            self.granularity_,
            base_model=base_model,
            model_paths=model_paths if model_paths is not None else list(self.tasks),
        )

    def _fitted(self) -> None:
        if not hasattr(self, "coefficients_"):
            raise RuntimeError("call fit() first")
