"""mctx's Gumbel MuZero policy on open_spiel games, with our evaluators, as a baseline.

`mctx <https://github.com/google-deepmind/mctx>`_ searches a *model* given as a JAX
function ``recurrent_fn(params, key, action, embedding)``. Here the model is the real
game: the embedding is the index of an open_spiel state kept on the host, and each
simulation's step (clone, apply the action, evaluate the new state with the evaluator)
runs through ``jax.pure_callback``. So the search's tree logic is mctx's own (Gumbel
top-k sampling at the root, sequential halving, completed Q-values, deterministic
interior selection), and the game and network are the same as RMCTS's and MCTS-UCB's.

Conventions: two-player zero-sum games alternate perspectives with ``discount = -1``
(``+1`` when the same player moves again), the reward of a move into a terminal state is
its return for the player who moved, and terminal states are absorbing (reward 0,
discount 0). Illegal actions are masked at the root (``invalid_actions``) and get prior
logits of -1e9 below it, so Gumbel MuZero's interior selection never picks them. Chance
nodes are not supported (mctx models are deterministic).

Requires the ``mctx`` extra: ``pip install "rmcts[mctx]"`` (jax, mctx).

References:
    Danihelka et al., "Policy improvement by planning with Gumbel", ICLR 2022.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from icml26_core.validation import check_int

from rmcts.games import check_state
from rmcts.tree import EvaluationCounter, Node, SearchResult

__all__ = ["MctxGumbelMuZero"]

_ILLEGAL_LOGIT = -1e9


class MctxGumbelMuZero:
    """Gumbel MuZero (mctx) searching an open_spiel game with an evaluator.

    One root per search; every simulation makes one evaluator call (of one state) from
    a host callback, as sequential MCTS-UCB does.

    Args:
        evaluator: Object with ``evaluate(states) -> (logits, values)``.
        simulations: Simulations per search (>= 1); the root's evaluation is extra, so
            ``simulations + 1`` states are evaluated at most (fewer when a simulation
            reaches a terminal state).
        max_num_considered_actions: Gumbel top-k at the root (mctx's default 16).
        seed: Seed of the Gumbel noise (advanced every search).

    Raises:
        TypeError, ValueError: On invalid parameters.
        ImportError: If jax or mctx is not installed.

    Example:
        >>> from rmcts import RolloutEvaluator, load_game
        >>> state = load_game("tic_tac_toe").new_initial_state()
        >>> res = MctxGumbelMuZero(RolloutEvaluator(seed=0), simulations=16).search(state)
        >>> res.action in state.legal_actions()
        True
    """

    def __init__(
        self,
        evaluator: Any,
        *,
        simulations: int = 64,
        max_num_considered_actions: int = 16,
        seed: int = 0,
    ) -> None:
        try:
            import jax
            import mctx
        except ImportError as err:  # pragma: no cover - the extra is missing
            raise ImportError(
                'MctxGumbelMuZero needs jax and mctx: pip install "rmcts[mctx]"'
            ) from err
        if not callable(getattr(evaluator, "evaluate", None)):
            raise TypeError(
                "evaluator must have a method evaluate(states) -> (logits, values), "
                f"got {type(evaluator).__name__}"
            )
        self.evaluator = evaluator
        self.simulations = check_int("simulations", simulations, low=1)
        self.max_num_considered_actions = check_int(
            "max_num_considered_actions", max_num_considered_actions, low=1
        )
        self._jax, self._mctx = jax, mctx
        self._key = jax.random.PRNGKey(int(seed))
        self._compiled: dict[int, Any] = {}
        self._store: list[Any] = []
        self._counter: EvaluationCounter | None = None

    # -- host side ---------------------------------------------------------------
    def _evaluate(self, states: list[Any], num_actions: int) -> tuple[np.ndarray, np.ndarray]:
        nodes = [Node(s) for s in states]
        assert self._counter is not None
        self._counter(nodes)  # checks the evaluator's output, softmax over legal actions
        logits = np.full((len(nodes), num_actions), _ILLEGAL_LOGIT, dtype=np.float32)
        values = np.zeros(len(nodes), dtype=np.float32)
        for i, n in enumerate(nodes):
            logits[i, n.actions] = np.log(np.maximum(n.prior, 1e-30))
            values[i] = n.value0_net * n.sign
        return logits, values

    def _step(self, action: np.ndarray, embedding: np.ndarray) -> tuple[np.ndarray, ...]:
        batch = len(action)
        num_actions = self._num_actions
        reward = np.zeros(batch, dtype=np.float32)
        discount = np.zeros(batch, dtype=np.float32)
        logits = np.zeros((batch, num_actions), dtype=np.float32)
        value = np.zeros(batch, dtype=np.float32)
        new_emb = np.zeros(batch, dtype=np.int32)
        pending: list[tuple[int, Any]] = []
        for b in range(batch):
            s = self._store[int(embedding[b])]
            if s.is_terminal():  # absorbing
                new_emb[b] = int(embedding[b])
                continue
            mover = s.current_player()
            a = int(action[b])
            if a not in s.legal_actions():  # never selected (prior -1e9); a loss if it were
                reward[b] = -1.0
                new_emb[b] = int(embedding[b])
                continue
            child = s.clone()
            child.apply_action(a)
            if child.is_chance_node():
                raise ValueError("MctxGumbelMuZero does not support chance nodes")
            self._store.append(child)
            new_emb[b] = len(self._store) - 1
            if child.is_terminal():
                reward[b] = float(child.returns()[mover])
            else:
                discount[b] = 1.0 if child.current_player() == mover else -1.0
                pending.append((b, child))
        if pending:
            lg, v = self._evaluate([c for _, c in pending], num_actions)
            for (b, _), row, val in zip(pending, lg, v, strict=True):
                logits[b] = row
                value[b] = val
        return reward, discount, logits, value, new_emb

    # -- JAX side ----------------------------------------------------------------
    def _policy_fn(self, num_actions: int) -> Any:
        fn = self._compiled.get(num_actions)
        if fn is not None:
            return fn
        jax, mctx = self._jax, self._mctx
        jnp = jax.numpy

        def recurrent_fn(params: Any, key: Any, action: Any, embedding: Any) -> Any:
            b = action.shape[0]
            shapes = (
                jax.ShapeDtypeStruct((b,), jnp.float32),
                jax.ShapeDtypeStruct((b,), jnp.float32),
                jax.ShapeDtypeStruct((b, num_actions), jnp.float32),
                jax.ShapeDtypeStruct((b,), jnp.float32),
                jax.ShapeDtypeStruct((b,), jnp.int32),
            )
            r, d, lg, v, e = jax.pure_callback(
                self._step, shapes, action, embedding, vmap_method="sequential"
            )
            return mctx.RecurrentFnOutput(reward=r, discount=d, prior_logits=lg, value=v), e

        def policy(key: Any, logits: Any, value: Any, invalid: Any) -> Any:
            root = mctx.RootFnOutput(
                prior_logits=logits, value=value, embedding=jnp.zeros((1,), jnp.int32)
            )
            out = mctx.gumbel_muzero_policy(
                params=(),
                rng_key=key,
                root=root,
                recurrent_fn=recurrent_fn,
                num_simulations=self.simulations,
                invalid_actions=invalid,
                max_num_considered_actions=self.max_num_considered_actions,
            )
            return (
                out.action,
                out.action_weights,
                out.search_tree.qvalues(jnp.zeros((1,), jnp.int32)),
                out.search_tree.summary().visit_counts,
            )

        fn = jax.jit(policy)
        self._compiled[num_actions] = fn
        return fn

    def step(self, state: Any) -> int:
        """Search from ``state`` and return the chosen action."""
        return self.search(state).action

    def search(self, state: Any) -> SearchResult:
        """Search from ``state`` (not mutated).

        Returns:
            A :class:`~rmcts.SearchResult`: the action, mctx's ``action_weights`` as the
            policy, the root's Q-values and visit counts (no ``root`` tree).

        Raises:
            ValueError: See :func:`rmcts.check_state`.
        """
        check_state(state)
        t0 = time.perf_counter()
        jax = self._jax
        num_actions = state.get_game().num_distinct_actions()
        self._num_actions = num_actions
        self._counter = EvaluationCounter(self.evaluator)
        self._store = [state.clone()]
        logits, value = self._evaluate([state], num_actions)
        invalid = np.ones((1, num_actions), dtype=bool)
        invalid[0, state.legal_actions()] = False
        self._key, key = jax.random.split(self._key)
        action, weights, q, visits = self._policy_fn(num_actions)(key, logits, value, invalid)
        action = int(np.asarray(action)[0])
        legal = np.asarray(state.legal_actions())
        policy = np.zeros(num_actions)
        policy[legal] = np.asarray(weights, dtype=np.float64)[0, legal]
        qa = np.full(num_actions, np.nan)
        qa[legal] = np.asarray(q, dtype=np.float64)[0, legal]
        va = np.zeros(num_actions)
        va[legal] = np.asarray(visits, dtype=np.float64)[0, legal]
        prior = np.zeros(num_actions)
        prior[legal] = np.exp(logits[0, legal]) / np.exp(logits[0, legal]).sum()
        counter = self._counter
        self._store = []
        return SearchResult(
            action=action,
            policy=policy / max(policy.sum(), 1e-300),
            value=float(value[0]),
            simulations=self.simulations,
            evaluations=counter.evaluations,
            batches=len(counter.batch_sizes),
            seconds=time.perf_counter() - t0,
            batch_sizes=list(counter.batch_sizes),
            q=qa,
            visits=va,
            prior=prior,
            root=None,
        )

    def __getstate__(self) -> dict[str, Any]:
        """Picklable for worker processes: the compiled functions are rebuilt there."""
        return {
            "evaluator": self.evaluator,
            "simulations": self.simulations,
            "max_num_considered_actions": self.max_num_considered_actions,
            "key": np.asarray(self._key),
        }

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__init__(
            d["evaluator"],
            simulations=d["simulations"],
            max_num_considered_actions=d["max_num_considered_actions"],
        )
        self._key = self._jax.numpy.asarray(d["key"])
