"""RMCTS and AlphaZero's MCTS-UCB (PUCT) on one tree, one evaluator and one batching budget.

Both searches count a budget of ``simulations``: tree nodes added, the root included
(terminal nodes cost no network evaluation). Both send the evaluator batches of at most
``batch_size`` states.

RMCTS (our reading of the abstract):

1. *Grow the tree from the prior.* Best-first expansion by the probability of reaching
   a node under the prior policy (the product of priors along its path, priors mixed
   with ``growth_uniform`` of uniform), ``batch_size`` frontier nodes at a time, each
   batch evaluated in one network call. No values are used while growing, so nothing
   is sequential except the batches.
2. *Re-estimate values recursively.* From the deepest level up to the root, every
   internal node gets ``q(s, a)`` from its children (the parent's network value for
   children not in the tree), the regularized posterior ``pi_bar`` of Grill et al.
   (2020) with ``N = sum_a n_a`` the subtree sizes, and the value
   ``v(s) = (v_net(s) + N * pi_bar . q) / (1 + N)``, so the node's own evaluation weighs
   as one sample, as in MCTS. All nodes of one depth are solved in one vectorized call.

The root policy is ``pi_bar`` at the root; the move is its argmax.

MCTS-UCB is AlphaZero's: PUCT selection ``Q + c * P * sqrt(N_parent) / (1 + N_a)``,
unvisited actions valued at the parent's network value, visit-count policy, and for
``batch_size > 1`` leaves collected with a virtual loss and evaluated together.
"""

from __future__ import annotations

import heapq
import time
from typing import Any

import numpy as np

from rmcts.posterior import _pi_bar_unchecked
from rmcts.tree import EvaluationCounter, Node, SearchResult

__all__ = ["MCTS", "RMCTS", "backup"]


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def _check_float(name: str, value: Any, low: float, high: float = np.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not (np.isfinite(value) and low <= value <= high):
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
    return float(value)


class _Search:
    """Common parameters, validation, root handling and result assembly."""

    def __init__(
        self,
        evaluator: Any,
        *,
        simulations: int,
        batch_size: int,
        c: float,
        dirichlet_alpha: float | None,
        dirichlet_fraction: float,
        seed: int | None,
    ) -> None:
        if not callable(getattr(evaluator, "evaluate", None)):
            raise TypeError(
                "evaluator must have a method evaluate(states) -> (logits, values), "
                f"got {type(evaluator).__name__}"
            )
        self.evaluator = evaluator
        self.simulations = _check_int("simulations", simulations, 1)
        self.batch_size = _check_int("batch_size", batch_size, 1)
        self.c = _check_float("c", c, 0.0)
        if dirichlet_alpha is not None:
            _check_float("dirichlet_alpha", dirichlet_alpha, 1e-9)
        self.dirichlet_alpha = dirichlet_alpha
        self.dirichlet_fraction = _check_float("dirichlet_fraction", dirichlet_fraction, 0.0, 1.0)
        self.rng = np.random.default_rng(seed)

    def _root(self, state: Any, counter: EvaluationCounter) -> Node:
        if state.is_terminal():
            raise ValueError("cannot search from a terminal state (no legal actions)")
        if state.is_chance_node():
            raise ValueError("chance nodes are not supported (deterministic games only)")
        root = Node(state.clone())
        counter([root])
        if self.dirichlet_alpha is not None and self.dirichlet_fraction > 0:
            noise = self.rng.dirichlet(np.full(len(root.actions), self.dirichlet_alpha))
            root.prior = (
                1 - self.dirichlet_fraction
            ) * root.prior + self.dirichlet_fraction * noise
        return root

    def _result(
        self, root: Node, legal_policy: np.ndarray, counter: EvaluationCounter, t0: float, sims: int
    ) -> SearchResult:
        num_actions = root.state.get_game().num_distinct_actions()
        policy = np.zeros(num_actions)
        policy[root.actions] = legal_policy
        # ties (e.g. equal visit counts) go to the higher prior
        order = np.lexsort((-root.prior, -legal_policy))
        return SearchResult(
            action=int(root.actions[order[0]]),
            policy=policy,
            value=float(root.value0 * root.sign),
            simulations=sims,
            evaluations=counter.evaluations,
            batches=len(counter.batch_sizes),
            seconds=time.perf_counter() - t0,
            batch_sizes=list(counter.batch_sizes),
            root=root,
        )

    def step(self, state: Any) -> int:
        """Search from ``state`` and return the chosen action."""
        return self.search(state).action

    def search(self, state: Any) -> SearchResult:  # pragma: no cover - abstract
        raise NotImplementedError


class RMCTS(_Search):
    """Recursive MCTS: grow the tree from the prior, then back up values with ``pi_bar``.

    Args:
        evaluator: Object with ``evaluate(states) -> (logits, values)``.
        simulations: Tree nodes to add, root included (>= 1).
        batch_size: Most states per evaluator call (>= 1).
        c: Exploration constant of ``lambda_N = c * sqrt(N) / (|A| + N)``.
        growth_uniform: Weight of the uniform policy mixed into the prior for growing the
            tree only (0 grows purely from the prior, as the abstract says).
        dirichlet_alpha: Root Dirichlet noise concentration (self-play); None for none.
        dirichlet_fraction: Weight of that noise in the root prior.
        seed: Seed of the noise generator.

    Raises:
        ValueError, TypeError: On invalid parameters.

    References:
        "RMCTS" (ICML 2026) and Grill et al., "Monte-Carlo tree search as regularized policy
        optimization", ICML 2020.

    Example:
        >>> from rmcts import RMCTS, RolloutEvaluator, load_game
        >>> state = load_game("tic_tac_toe").new_initial_state()
        >>> result = RMCTS(RolloutEvaluator(seed=0), simulations=32, batch_size=8).search(state)
        >>> result.simulations, round(float(result.policy.sum()), 6)
        (32, 1.0)
    """

    def __init__(
        self,
        evaluator: Any,
        *,
        simulations: int = 64,
        batch_size: int = 16,
        c: float = 1.25,
        growth_uniform: float = 0.0,
        dirichlet_alpha: float | None = None,
        dirichlet_fraction: float = 0.25,
        seed: int | None = None,
    ) -> None:
        super().__init__(
            evaluator,
            simulations=simulations,
            batch_size=batch_size,
            c=c,
            dirichlet_alpha=dirichlet_alpha,
            dirichlet_fraction=dirichlet_fraction,
            seed=seed,
        )
        self.growth_uniform = _check_float("growth_uniform", growth_uniform, 0.0, 1.0)

    def search(self, state: Any) -> SearchResult:
        """Search from ``state`` (not mutated); see the module docstring for the algorithm."""
        t0 = time.perf_counter()
        counter = EvaluationCounter(self.evaluator)
        root = self._root(state, counter)
        nodes = self.grow(root, counter)
        root_policy = backup(nodes, self.c)
        return self._result(root, root_policy, counter, t0, len(nodes))

    def _growth_prior(self, node: Node) -> np.ndarray:
        if self.growth_uniform == 0.0:
            return node.prior
        k = len(node.actions)
        return (1 - self.growth_uniform) * node.prior + self.growth_uniform / k

    def grow(self, root: Node, counter: EvaluationCounter) -> list[Node]:
        """Expand ``simulations - 1`` nodes best-first by prior reach probability.

        Returns:
            All nodes of the tree (root first).
        """
        nodes = [root]
        frontier: list[tuple[float, int, Node, int]] = []
        tie = 0

        def push_children(node: Node, reach: float) -> None:
            nonlocal tie
            for i, p in enumerate(self._growth_prior(node)):
                heapq.heappush(frontier, (-reach * p, tie, node, i))
                tie += 1

        push_children(root, 1.0)
        while len(nodes) < self.simulations and frontier:
            take = min(self.batch_size, self.simulations - len(nodes))
            pending: list[tuple[Node, float]] = []
            for _ in range(take):
                if not frontier:
                    break
                neg_reach, _, parent, i = heapq.heappop(frontier)
                child = parent.child(i)
                nodes.append(child)
                if not child.terminal:
                    pending.append((child, -neg_reach))
            counter([n for n, _ in pending])
            for child, reach in pending:
                push_children(child, reach)
        return nodes


def backup(nodes: list[Node], c: float) -> np.ndarray:
    """Recursive re-estimation from the leaves to the root with ``pi_bar`` at every node.

    Sets ``value0`` and ``visits`` (subtree sizes per action) of every node and returns
    ``pi_bar`` at the root (over the root's legal actions). Nodes of one depth are solved
    in one vectorized :func:`rmcts.posterior.pi_bar` call.

    Args:
        nodes: The tree's nodes, root first; children must be in the list.
        c: Exploration constant of ``lambda_N``.

    Returns:
        float64 ``(k,)`` root posterior over ``nodes[0].actions``.
    """
    size = {id(n): 1.0 for n in nodes}
    by_depth: dict[int, list[Node]] = {}
    for n in nodes:
        if not n.terminal and any(ch is not None for ch in n.children):
            by_depth.setdefault(n.depth, []).append(n)
    root = nodes[0]
    root_policy = root.prior.copy() if len(root.prior) else np.zeros(0)
    for depth in sorted(by_depth, reverse=True):
        level = by_depth[depth]
        width = max(len(n.actions) for n in level)
        prior = np.zeros((len(level), width))
        q = np.zeros((len(level), width))
        counts = np.zeros((len(level), width))
        mask = np.zeros((len(level), width), dtype=bool)
        for r, n in enumerate(level):
            k = len(n.actions)
            mask[r, :k] = True
            prior[r, :k] = n.prior
            q[r, :k] = n.value0_net * n.sign  # children not in the tree: the node's own value
            for i, ch in enumerate(n.children):
                if ch is not None:
                    q[r, i] = ch.value0 * n.sign
                    counts[r, i] = size[id(ch)]
        total = counts.sum(axis=1)
        policy = _pi_bar_unchecked(prior, q, total, c, mask)
        values = (
            np.array([n.value0_net * n.sign for n in level]) + total * (policy * q).sum(1)
        ) / (1.0 + total)
        for r, n in enumerate(level):
            k = len(n.actions)
            n.visits = counts[r, :k].copy()
            n.value0 = float(values[r]) * n.sign
            size[id(n)] = 1.0 + total[r]
            if n is root:
                root_policy = policy[r, :k].copy()
    return root_policy


class MCTS(_Search):
    """AlphaZero's MCTS with PUCT selection (MCTS-UCB), batched with a virtual loss.

    Args:
        evaluator: Object with ``evaluate(states) -> (logits, values)``.
        simulations: Simulations, the root's evaluation included (>= 1).
        batch_size: Leaves collected (with a virtual loss) per evaluator call (>= 1);
            1 is AlphaZero's sequential search.
        c: ``c_puct`` of ``Q + c * P * sqrt(N_parent) / (1 + N_a)``.
        virtual_loss: Value (in ``[0, 1]`` losses) charged per pending visit while a batch
            is collected.
        dirichlet_alpha: Root Dirichlet noise concentration (self-play); None for none.
        dirichlet_fraction: Weight of that noise in the root prior.
        seed: Seed of the noise generator.

    References:
        Silver et al., "A general reinforcement learning algorithm that masters chess,
        shogi, and Go through self-play", Science 2018.

    Example:
        >>> from rmcts import MCTS, RolloutEvaluator, load_game
        >>> state = load_game("tic_tac_toe").new_initial_state()
        >>> result = MCTS(RolloutEvaluator(seed=0), simulations=32).search(state)
        >>> result.simulations, round(float(result.policy.sum()), 6)
        (32, 1.0)
    """

    def __init__(
        self,
        evaluator: Any,
        *,
        simulations: int = 64,
        batch_size: int = 1,
        c: float = 1.25,
        virtual_loss: float = 1.0,
        dirichlet_alpha: float | None = None,
        dirichlet_fraction: float = 0.25,
        seed: int | None = None,
    ) -> None:
        super().__init__(
            evaluator,
            simulations=simulations,
            batch_size=batch_size,
            c=c,
            dirichlet_alpha=dirichlet_alpha,
            dirichlet_fraction=dirichlet_fraction,
            seed=seed,
        )
        self.virtual_loss = _check_float("virtual_loss", virtual_loss, 0.0, 1.0)

    def _select(self, node: Node) -> int:
        total = node.visits.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            q = np.where(
                node.visits > 0,
                node.value_sum0 * node.sign / node.visits,
                node.value0_net * node.sign,
            )
        u = q + self.c * node.prior * np.sqrt(total + 1.0) / (1.0 + node.visits)
        return int(np.argmax(u))

    def _descend(self, root: Node) -> tuple[list[tuple[Node, int]], Node]:
        path: list[tuple[Node, int]] = []
        node = root
        while node.evaluated and not node.terminal:
            i = self._select(node)
            path.append((node, i))
            node.visits[i] += 1
            node.value_sum0[i] -= self.virtual_loss * node.sign
            node = node.child(i)
        return path, node

    def _backup(self, path: list[tuple[Node, int]], value0: float) -> None:
        for node, i in path:
            node.value_sum0[i] += value0 + self.virtual_loss * node.sign

    def _undo(self, path: list[tuple[Node, int]]) -> None:
        for node, i in path:
            node.visits[i] -= 1
            node.value_sum0[i] += self.virtual_loss * node.sign

    def search(self, state: Any) -> SearchResult:
        """Run the simulations from ``state`` (not mutated) and return the visit policy."""
        t0 = time.perf_counter()
        counter = EvaluationCounter(self.evaluator)
        root = self._root(state, counter)
        done = 1
        while done < self.simulations:
            pending: list[tuple[list[tuple[Node, int]], Node]] = []
            seen: set[int] = set()
            while done + len(pending) < self.simulations and len(pending) < self.batch_size:
                path, leaf = self._descend(root)
                if leaf.terminal:
                    self._backup(path, leaf.value0_net)
                    done += 1
                    continue
                if id(leaf) in seen:  # the batch ran into a leaf already pending
                    self._undo(path)
                    break
                seen.add(id(leaf))
                pending.append((path, leaf))
            counter([leaf for _, leaf in pending])
            for path, leaf in pending:
                self._backup(path, leaf.value0_net)
            done += len(pending)
        visits = root.visits
        policy = visits / visits.sum() if visits.sum() > 0 else root.prior.copy()
        root.value0 = float((root.value0_net + root.value_sum0.sum()) / (1.0 + visits.sum()))
        return self._result(root, policy, counter, t0, done)
