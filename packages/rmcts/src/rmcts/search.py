"""RMCTS and AlphaZero's MCTS-UCB (PUCT) on one tree, one evaluator and one batching budget.

Both searches count a budget of ``simulations``: tree nodes added, the root included
(terminal nodes cost no network evaluation; chance nodes cost nothing and are not
counted). Both send the evaluator batches of at most ``batch_size`` states per root, and
both search many roots at once (:meth:`search_batch`, like mctx's batched search), with
one evaluator call per step for all of them.

RMCTS (our reading of the abstract):

1. *Grow the tree from the prior.* Best-first expansion by the probability of reaching
   a node under the prior policy (the product of priors along its path, priors mixed
   with ``growth_uniform`` of uniform; at chance nodes, the outcome probabilities),
   ``batch_size`` frontier nodes at a time, each batch evaluated in one network call.
   No values are used while growing, so nothing is sequential except the batches.
2. *Re-estimate values recursively.* From the deepest level up to the root, every
   internal decision node gets ``q(s, a)`` from its children (the node's network value
   for children not in the tree), the regularized posterior ``pi_bar`` of Grill et al.
   (2020) with ``N = sum_a n_a`` the subtree sizes, and the value
   ``v(s) = (v_net(s) + N * pi_bar . q) / (1 + N)``, so the node's own evaluation weighs
   as one sample, as in MCTS. A chance node's value is the expectation over its
   outcomes, ``sum_o p(o) v(child_o)``, with the nearest decision node's network value
   for outcomes not in the tree. All nodes of one depth are solved in one vectorized call.

The root policy is ``pi_bar`` at the root; the move is its argmax.

MCTS-UCB is AlphaZero's: PUCT selection ``Q + c * P * sqrt(N_parent) / (1 + N_a)``,
unvisited actions valued at the parent's network value, outcomes of chance nodes
sampled from their probabilities (as open_spiel's ``MCTSBot`` does), visit-count policy,
and for ``batch_size > 1`` leaves collected with a virtual loss and evaluated together.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int

from rmcts.games import check_state
from rmcts.posterior import _pi_bar_unchecked
from rmcts.tree import EvaluationCounter, Node, SearchResult

__all__ = ["MCTS", "RMCTS", "backup"]


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
        self.simulations = check_int("simulations", simulations, low=1)
        self.batch_size = check_int("batch_size", batch_size, low=1)
        self.c = check_float("c", c, low=0.0)
        if dirichlet_alpha is not None:
            dirichlet_alpha = check_float(
                "dirichlet_alpha", dirichlet_alpha, low=0.0, low_inclusive=False
            )
        self.dirichlet_alpha = dirichlet_alpha
        self.dirichlet_fraction = check_float(
            "dirichlet_fraction", dirichlet_fraction, low=0.0, high=1.0
        )
        self.rng = np.random.default_rng(seed)

    def _roots(self, states: Sequence[Any], counter: EvaluationCounter) -> list[Node]:
        if isinstance(states, str) or not isinstance(states, Sequence) or len(states) == 0:
            raise ValueError("states must be a nonempty sequence of open_spiel states")
        for state in states:
            check_state(state)
        roots = [Node(state.clone()) for state in states]
        counter(roots)
        if self.dirichlet_alpha is not None and self.dirichlet_fraction > 0:
            for root in roots:
                noise = self.rng.dirichlet(np.full(len(root.actions), self.dirichlet_alpha))
                root.prior = (
                    1 - self.dirichlet_fraction
                ) * root.prior + self.dirichlet_fraction * noise
        return roots

    @staticmethod
    def _result(
        root: Node,
        legal_policy: np.ndarray,
        legal_q: np.ndarray,
        counter: EvaluationCounter,
        seconds: float,
        sims: int,
        evaluations: int,
    ) -> SearchResult:
        num_actions = root.state.get_game().num_distinct_actions()

        def full(values: np.ndarray, fill: float) -> np.ndarray:
            out = np.full(num_actions, fill)
            out[root.actions] = values
            return out

        # ties (e.g. equal visit counts) go to the higher prior
        order = np.lexsort((-root.prior, -legal_policy))
        return SearchResult(
            action=int(root.actions[order[0]]),
            policy=full(legal_policy, 0.0),
            value=float(np.clip(root.value0 * root.sign, -1.0, 1.0)),
            simulations=sims,
            evaluations=evaluations,
            batches=len(counter.batch_sizes),
            seconds=seconds,
            batch_sizes=list(counter.batch_sizes),
            q=full(legal_q, np.nan),
            visits=full(root.visits, 0.0),
            prior=full(root.prior, 0.0),
            root=root,
        )

    def step(self, state: Any) -> int:
        """Search from ``state`` and return the chosen action."""
        return self.search(state).action

    def search(self, state: Any) -> SearchResult:
        """Search from ``state`` (not mutated) and return the :class:`SearchResult`.

        Raises:
            ValueError: If ``state`` is terminal, a chance node, of an unsupported game
                (simultaneous moves, imperfect information, more than two players, ...),
                or if the evaluator returns bad logits or values.
        """
        return self.search_batch([state])[0]

    def search_batch(self, states: Sequence[Any]) -> list[SearchResult]:  # pragma: no cover
        raise NotImplementedError


class _Growth:
    """RMCTS's best-first growth of one tree by prior reach probability."""

    def __init__(self, root: Node, budget: int, prior: Callable[[Node], np.ndarray]) -> None:
        self.nodes = [root]
        self.counted = 1  # decision and terminal nodes, root included (chance nodes are free)
        self.evaluations = 1
        self.budget = budget
        self.prior = prior
        self.frontier: list[tuple[float, int, Node, int]] = []
        self.tie = 0
        self.push(root, 1.0)

    @property
    def done(self) -> bool:
        return self.counted >= self.budget or not self.frontier

    def push(self, node: Node, reach: float) -> None:
        probs = node.prior if node.chance else self.prior(node)
        for i, p in enumerate(probs):
            heapq.heappush(self.frontier, (-reach * p, self.tie, node, i))
            self.tie += 1

    def pop(self, take: int) -> list[tuple[Node, float]]:
        """Add the most probable frontier nodes; return those that need an evaluation."""
        pending: list[tuple[Node, float]] = []
        while self.frontier and self.counted < self.budget and len(pending) < take:
            neg_reach, _, parent, i = heapq.heappop(self.frontier)
            child = parent.child(i)
            self.nodes.append(child)
            if child.chance:
                self.push(child, -neg_reach)
                continue
            self.counted += 1
            if not child.terminal:
                pending.append((child, -neg_reach))
        self.evaluations += len(pending)
        return pending


class RMCTS(_Search):
    """Recursive MCTS: grow the tree from the prior, then back up values with ``pi_bar``.

    Args:
        evaluator: Object with ``evaluate(states) -> (logits, values)``.
        simulations: Tree nodes to add, root included (>= 1); chance nodes are not counted.
        batch_size: Most states per evaluator call and root (>= 1).
        c: Exploration constant of ``lambda_N = c * sqrt(N) / (|A| + N)``.
        growth_uniform: Weight of the uniform policy mixed into the prior for growing the
            tree only (0 grows purely from the prior, as the abstract says).
        dirichlet_alpha: Root Dirichlet noise concentration (self-play); None for none.
        dirichlet_fraction: Weight of that noise in the root prior.
        seed: Seed of the noise generator.

    Raises:
        ValueError: On parameters out of range (the message names the argument).
        TypeError: On parameters of the wrong type, or an evaluator without ``evaluate``.

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
        self.growth_uniform = check_float("growth_uniform", growth_uniform, low=0.0, high=1.0)

    def search_batch(self, states: Sequence[Any]) -> list[SearchResult]:
        """Search from every state of ``states`` at once (none is mutated).

        The trees grow in lockstep: each step takes up to ``batch_size`` frontier nodes
        from every tree and evaluates all of them in one evaluator call, so ``B`` roots
        cost about as many calls as one. Each tree's result equals that of
        :meth:`search` on its root alone (the evaluator permitting: a network may round
        differently in a larger batch).

        Args:
            states: Nonempty sequence of decision-node states.

        Returns:
            One :class:`SearchResult` per state, in order (``batches``, ``batch_sizes``
            and ``seconds`` are those of the whole batch).

        Raises:
            ValueError: See :meth:`search`.
        """
        t0 = time.perf_counter()
        counter = EvaluationCounter(self.evaluator)
        roots = self._roots(states, counter)
        trees = [_Growth(root, self.simulations, self._growth_prior) for root in roots]
        while True:
            work = [(t, t.pop(self.batch_size)) for t in trees if not t.done]
            if not work:
                break
            counter([n for _, pending in work for n, _ in pending])
            for tree, pending in work:
                for child, reach in pending:
                    tree.push(child, reach)
        policies = _backup([n for t in trees for n in t.nodes], self.c)
        seconds = time.perf_counter() - t0
        return [
            self._result(
                t.nodes[0],
                policies[id(t.nodes[0])],
                t.nodes[0].q(),
                counter,
                seconds,
                t.counted,
                t.evaluations,
            )
            for t in trees
        ]

    def _growth_prior(self, node: Node) -> np.ndarray:
        if self.growth_uniform == 0.0:
            return node.prior
        k = len(node.actions)
        return (1 - self.growth_uniform) * node.prior + self.growth_uniform / k


def backup(nodes: list[Node], c: float) -> np.ndarray:
    """Recursive re-estimation from the leaves to the root with ``pi_bar`` at every node.

    Sets ``value0`` and ``visits`` (subtree sizes per action) of every node and returns
    ``pi_bar`` at the root (over the root's legal actions). Decision nodes of one depth
    are solved in one vectorized :func:`rmcts.posterior.pi_bar` call; a chance node takes
    the expectation of its children's values over the outcome probabilities (the
    nearest decision node's network value for outcomes not in the tree). Subtree sizes
    count decision and terminal nodes; chance nodes add none of their own.

    Args:
        nodes: The tree's nodes, root first; children must be in the list.
        c: Exploration constant of ``lambda_N``.

    Returns:
        float64 ``(k,)`` root posterior over ``nodes[0].actions``.
    """
    return _backup(nodes, c)[id(nodes[0])]


def _backup(nodes: list[Node], c: float) -> dict[int, np.ndarray]:
    """:func:`backup` for the nodes of one or more trees; root policies by ``id(root)``."""
    size = {id(n): (0.0 if n.chance else 1.0) for n in nodes}
    by_depth: dict[int, list[Node]] = {}
    policies = {id(n): n.prior.copy() for n in nodes if n.depth == 0}
    for n in nodes:
        if not n.terminal and any(ch is not None for ch in n.children):
            by_depth.setdefault(n.depth, []).append(n)
    for depth in sorted(by_depth, reverse=True):
        level = by_depth[depth]
        for n in (n for n in level if n.chance):
            counts = np.array([0.0 if ch is None else size[id(ch)] for ch in n.children])
            values = np.array([n.value0_net if ch is None else ch.value0 for ch in n.children])
            n.visits = counts
            n.value0 = float(n.prior @ values)
            size[id(n)] = float(counts.sum())
        level = [n for n in level if not n.chance]
        if not level:
            continue
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
            if depth == 0:
                policies[id(n)] = policy[r, :k].copy()
    return policies


class MCTS(_Search):
    """AlphaZero's MCTS with PUCT selection (MCTS-UCB), batched with a virtual loss.

    Args:
        evaluator: Object with ``evaluate(states) -> (logits, values)``.
        simulations: Simulations, the root's evaluation included (>= 1).
        batch_size: Leaves collected (with a virtual loss) per evaluator call and root
            (>= 1); 1 is AlphaZero's sequential search.
        c: ``c_puct`` of ``Q + c * P * sqrt(N_parent) / (1 + N_a)``.
        virtual_loss: Value (in ``[0, 1]`` losses) charged per pending visit while a batch
            is collected.
        dirichlet_alpha: Root Dirichlet noise concentration (self-play); None for none.
        dirichlet_fraction: Weight of that noise in the root prior.
        seed: Seed of the noise generator and of the chance outcomes sampled in the tree.

    Raises:
        ValueError: On parameters out of range (the message names the argument).
        TypeError: On parameters of the wrong type, or an evaluator without ``evaluate``.

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
        self.virtual_loss = check_float("virtual_loss", virtual_loss, low=0.0, high=1.0)

    def _select(self, node: Node) -> int:
        if node.chance:
            return int(self.rng.choice(len(node.actions), p=node.prior))
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
            node.value_sum0[i] -= self.virtual_loss * node.sign  # none at chance nodes
            node = node.child(i)
        return path, node

    def _backup(self, path: list[tuple[Node, int]], value0: float) -> None:
        for node, i in path:
            node.value_sum0[i] += value0 + self.virtual_loss * node.sign

    def _undo(self, path: list[tuple[Node, int]]) -> None:
        for node, i in path:
            node.visits[i] -= 1
            node.value_sum0[i] += self.virtual_loss * node.sign

    def _collect(self, root: Node, done: int) -> tuple[list[tuple[list, Node]], int]:
        """Descend under virtual loss until a batch of new leaves (or the budget) is reached."""
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
        return pending, done

    def search_batch(self, states: Sequence[Any]) -> list[SearchResult]:
        """Run the simulations from every state of ``states`` at once (none is mutated).

        Each step collects up to ``batch_size`` leaves per tree (under virtual loss) and
        evaluates the leaves of all trees in one evaluator call.

        Args:
            states: Nonempty sequence of decision-node states.

        Returns:
            One :class:`SearchResult` per state (visit-count policies), in order
            (``batches``, ``batch_sizes`` and ``seconds`` are those of the whole batch).

        Raises:
            ValueError: See :meth:`search`.
        """
        t0 = time.perf_counter()
        counter = EvaluationCounter(self.evaluator)
        roots = self._roots(states, counter)
        done = [1] * len(roots)
        evaluations = [1] * len(roots)
        while True:
            batch: list[tuple[int, list[tuple[Node, int]], Node]] = []
            active = False
            for j, root in enumerate(roots):
                if done[j] >= self.simulations:
                    continue
                active = True
                pending, done[j] = self._collect(root, done[j])
                batch.extend((j, path, leaf) for path, leaf in pending)
            if not active:
                break
            counter([leaf for _, _, leaf in batch])
            for j, path, leaf in batch:
                self._backup(path, leaf.value0_net)
                done[j] += 1
                evaluations[j] += 1
        seconds = time.perf_counter() - t0
        results = []
        for j, root in enumerate(roots):
            visits = root.visits
            total = visits.sum()
            policy = visits / total if total > 0 else root.prior.copy()
            root.value0 = float((root.value0_net + root.value_sum0.sum()) / (1.0 + total))
            with np.errstate(invalid="ignore", divide="ignore"):
                q = np.where(
                    visits > 0, root.value_sum0 * root.sign / visits, root.value0_net * root.sign
                )
            results.append(self._result(root, policy, q, counter, seconds, done[j], evaluations[j]))
        return results
