"""Compressed decentralized SGDA with momentum, gradient tracking and error-fed gossip.

Node ``i`` minimizes over its primal parameters ``x_i`` and maximizes over its dual
parameters ``y_i`` the average ``f = (1/n) sum_i f_i(x, y)`` of the nodes' local
objectives, talking only to its neighbours in a gossip network, and sending only
compressed messages. It keeps (per variable ``v`` in ``{x, y}``):

- ``u`` the momentum estimate of its local gradient (``"ema"``: heavy-ball in EMA form,
  ``u = beta u + (1 - beta) g``; ``"storm"``: the recursive estimator of Cutkosky and
  Orabona (2019), ``u = g(v_t) + beta (u - g(v_{t-1}))`` on the same sample);
- ``z`` the gradient tracker (Di Lorenzo and Scutari 2016): ``z += u_new - u_old``,
  then gossiped, so the node average of ``z`` is always the node average of ``u``;
- public copies ``v_hat`` and ``z_hat`` that every neighbour also holds, updated only by
  compressed differences (CHOCO-SGD, Koloskova et al. 2019), and
  ``s = sum_j W_ij v_hat_j`` kept incrementally from the received messages.

One :meth:`CompressedDSGDA.step` (all nodes, after ``backward()``):

1. ``u`` from the gradients; ``z_half = z + u_new - u_old``.
2. Tracker gossip: ``q = C(z_half - z_hat)``; ``z_hat += q``; ``s_z += mix(q)``;
   ``z = z_half + gamma_tracker (s_z - z_hat)``.
3. Local step, two time scales: ``x_half = x - lr_primal z_x``,
   ``y_half = y + lr_dual z_y``.
4. Variable gossip: ``q = C(x_half - x_hat)``; ``x_hat += q``; ``s_x += mix(q)``;
   ``x = x_half + gamma (s_x - x_hat)`` (and the same for ``y``).

``gamma`` balances the full-precision update ``x_half`` against the public copy, whose
distance from it is the compression residual: ``gamma = 1`` with the identity
compressor is exact gossip ``x = W x_half``; with a compressor of contraction ``delta``
(``E||C(v) - v||^2 <= (1 - delta)||v||^2``) CHOCO's analysis needs ``gamma`` of order
``delta rho^2`` (``rho`` the spectral gap of ``W``) and the step sizes shrink with it
(the consensus and compression errors feed each other, the "circle dependence" of the
abstract). Our default (``gamma=None``) is ``gamma = min(1, sqrt(delta))`` with
``delta`` the compressor's contraction for the message length (0.4 for scaled sign,
whose worst-case delta ``1/d`` is far below what it achieves): see the README.

Because ``W`` is doubly stochastic, the gossip terms ``sum_i (s_i - v_hat_i)`` vanish,
so the node averages follow the centralized update exactly:
``x_bar_{t+1} = x_bar_t - lr_primal u_bar_{t+1}`` (with tracking).

The same class runs on both backends of :mod:`icml26_core.decentralized`: in a
:class:`~icml26_core.decentralized.SimulatedNetwork` every parameter carries a leading
node dimension ``(n, ...)`` (row ``i`` is node ``i``); on a
:class:`~icml26_core.decentralized.GossipGroup` (one node per process, ``torchrun``)
each process holds its node's own tensors. The code path is the same; the tests check
that both give the same iterates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch
from icml26_core.decentralized import (
    QSGD,
    Compressor,
    Identity,
    RandomK,
    ScaledSign,
    SimulatedNetwork,
    TopK,
)
from icml26_core.validation import check_choice, check_float

__all__ = ["CompressedDSGDA", "default_gamma"]

_ROLES = ("primal", "dual")


# ---- the core's operators vectorized over stacked nodes (rows); same numbers ------------


def _b_identity(c: Any, X: Any, gens: list[Any]) -> tuple[Any, float]:
    return X.clone(), float(c.bits(X.shape[1], X.dtype))


def _b_topk(c: Any, X: Any, gens: list[Any]) -> tuple[Any, float]:
    k = c.k_for(X.shape[1])
    idx = torch.topk(X.abs(), k, dim=1, sorted=False).indices
    return torch.zeros_like(X).scatter_(1, idx, X.gather(1, idx)), float(
        c.bits(X.shape[1], X.dtype)
    )


def _b_randomk(c: Any, X: Any, gens: list[Any]) -> tuple[Any, float]:
    n, d = X.shape
    k = c.k_for(d)
    idx = torch.stack([torch.randperm(d, generator=gens[i])[:k] for i in range(n)]).to(X.device)
    vals = X.gather(1, idx)
    if c.unbiased:
        vals = vals * (d / k)
    return torch.zeros_like(X).scatter_(1, idx, vals), float(c.bits(d, X.dtype))


def _b_sign(c: Any, X: Any, gens: list[Any]) -> tuple[Any, float]:
    d = X.shape[1]
    scale = X.abs().sum(dim=1, keepdim=True) / d
    signs = torch.where(X >= 0, 1.0, -1.0).to(X.dtype)
    return signs * scale, float(c.bits(d, X.dtype))


def _b_qsgd(c: Any, X: Any, gens: list[Any]) -> tuple[Any, float]:
    n, d = X.shape
    u = torch.stack([torch.rand(d, generator=gens[i], dtype=torch.float64) for i in range(n)])
    norm = torch.linalg.vector_norm(X, dim=1, keepdim=True)
    safe = torch.where(norm == 0, torch.ones_like(norm), norm)
    scaled = X.abs().double() / safe.double() * c.levels
    low = torch.floor(scaled)
    level = (low + (u.to(X.device) < (scaled - low)).double()).clamp_(max=c.levels)
    signed = (torch.sign(X).double() * level).to(torch.int8)
    signed = torch.where(norm == 0, torch.zeros_like(signed), signed)
    scale = norm / c.levels
    if not c.unbiased:
        scale = scale / (1.0 + c._omega(d))
    return signed.to(X.dtype) * scale, float(c.bits(d, X.dtype))


_BATCHED = {
    Identity: _b_identity,
    TopK: _b_topk,
    RandomK: _b_randomk,
    ScaledSign: _b_sign,
    QSGD: _b_qsgd,
}


def default_gamma(compressor: Compressor, numel: int) -> float:
    """Our default consensus step ``min(1, sqrt(delta))`` for a message of ``numel`` entries.

    ``delta`` is the compressor's contraction (``compressor.delta(numel)``; for an unbiased
    QSGD that of its rescaled form ``C / (1 + omega)``, which is what error feedback needs:
    pass ``QSGD(b, unbiased=False)`` to gossip with that form), except for scaled sign,
    whose worst-case delta ``1 / d`` is far below the ``||v||_1^2 / (d ||v||^2)`` (about
    ``2 / pi`` for Gaussian-like differences) it achieves; for it we use 0.4.

    Args:
        compressor: The compression operator.
        numel: Entries of one message (>= 1).

    Returns:
        ``gamma`` in ``(0, 1]``.

    Raises:
        TypeError: If ``compressor`` is not a Compressor.
        ValueError: If ``numel`` < 1.
    """
    if not isinstance(compressor, Compressor):
        raise TypeError(
            f"compressor must be an icml26_core.decentralized Compressor, got "
            f"{type(compressor).__name__}"
        )
    if isinstance(compressor, ScaledSign):
        return 0.4
    return float(min(1.0, np.sqrt(compressor.delta(numel))))


def _is_stacked(group: Any) -> bool:
    return isinstance(group, SimulatedNetwork)


class CompressedDSGDA(torch.optim.Optimizer):
    """Decentralized SGDA with momentum, gradient tracking and compressed, error-fed gossip.

    ``step()`` after ``backward()``: the primal parameters take descent steps, the dual
    parameters ascent steps. See the module docs for the update.

    Args:
        primal_params: Iterable of tensors minimized over (e.g. ``model.parameters()``).
        dual_params: Iterable of tensors maximized over.
        group: The gossip network: a :class:`~icml26_core.decentralized.SimulatedNetwork`
            (every parameter stacked on dimension 0 with one row per node), a
            :class:`~icml26_core.decentralized.GossipGroup` (this process's node), or a
            mixing matrix (n, n), from which a ``SimulatedNetwork(W, seed=seed)`` is made.
        compressor: Compression operator of every message (default ``TopK(0.05)``);
            :class:`~icml26_core.decentralized.Identity` gives uncompressed gossip.
        lr_primal: Primal step size ``eta_x`` > 0.
        lr_dual: Dual step size ``eta_y`` > 0 (two time scales: usually ``eta_x << eta_y``).
        momentum: ``beta`` in ``[0, 1)``; 0 uses the stochastic gradient itself.
        gamma: Consensus step of the variables in ``(0, 1]``; None: :func:`default_gamma`.
        gamma_tracker: Consensus step of the trackers; None: the same as ``gamma``.
        momentum_kind: ``"ema"`` (heavy-ball, ``u = beta u + (1 - beta) g``) or
            ``"storm"`` (needs ``step(closure)``: the closure, evaluated at the previous
            iterate on the same minibatch, gives the correction).
        tracking: Gradient tracking (gossip of ``z``); False steps along ``u`` (CHOCO-SGDA).
        error_feedback: Keep the public copies; False compresses the iterate itself each
            round (naive compression: ``v_hat`` and ``s`` reset to zero every step).
        seed: Seed of the compression generators when ``group`` is a matrix.
        fast: In a ``SimulatedNetwork``, compress all nodes' rows in one batched
            operation (the core's operators, vectorized over nodes, drawing from the
            same per-node generators; the tests check it against the per-node path)
            and count the same bits. False uses ``network.compress`` node by node.

    Attributes:
        network: The gossip backend (``bits_sent``, ``rounds``, ``consensus_error``).
        stacked: Whether the parameters carry the node dimension (simulation).

    Raises:
        TypeError: If ``compressor`` is not a Compressor, ``group`` is neither a gossip
            backend (with ``mix``) nor a matrix, or a parameter list is a single tensor
            or holds something other than tensors.
        ValueError: If a step size, ``momentum`` or ``gamma`` is out of range, a
            parameter list is empty, a parameter is not floating point, stacked
            parameters lack the node dimension,
            ``group`` is an invalid mixing matrix (not doubly stochastic, disconnected),
            or (in :meth:`step`) a gradient is missing, NaN or infinite.

    Example:
        >>> import torch
        >>> from icml26_core.decentralized import TopK, mixing_matrix, topology
        >>> x = torch.zeros(4, 3, requires_grad=True)       # 4 nodes, primal in R^3
        >>> y = torch.zeros(4, 1, requires_grad=True)       # dual in R
        >>> opt = CompressedDSGDA([x], [y], mixing_matrix(topology("ring", 4)),
        ...                       TopK(k=1), lr_primal=0.1, lr_dual=0.1)
        >>> loss = ((x - 1) ** 2).sum() + (y * x.sum(1, keepdim=True)).sum() - (y**2).sum()
        >>> loss.backward(); opt.step(); opt.network.rounds
        4
    """

    def __init__(
        self,
        primal_params: Iterable[Any],
        dual_params: Iterable[Any],
        group: Any,
        compressor: Compressor | None = None,
        *,
        lr_primal: float = 0.01,
        lr_dual: float = 0.1,
        momentum: float = 0.9,
        gamma: float | None = None,
        gamma_tracker: float | None = None,
        momentum_kind: str = "ema",
        tracking: bool = True,
        error_feedback: bool = True,
        seed: int = 0,
        fast: bool = True,
    ) -> None:
        if compressor is None:
            compressor = TopK(0.05)
        if not isinstance(compressor, Compressor):
            raise TypeError(
                f"compressor must be an icml26_core.decentralized Compressor, got "
                f"{type(compressor).__name__}"
            )
        if not hasattr(group, "mix"):
            if not isinstance(group, (torch.Tensor, np.ndarray, list, tuple)):
                raise TypeError(
                    "group must be a SimulatedNetwork, a GossipGroup or a mixing matrix "
                    f"(n, n), got {type(group).__name__}"
                )
            group = SimulatedNetwork(group, seed=seed)  # validates W (doubly stochastic, ...)
        lr_primal = check_float("lr_primal", lr_primal, low=0.0, low_inclusive=False)
        lr_dual = check_float("lr_dual", lr_dual, low=0.0, low_inclusive=False)
        momentum = check_float("momentum", momentum, low=0.0, high=1.0, high_inclusive=False)
        for name, g in (("gamma", gamma), ("gamma_tracker", gamma_tracker)):
            if g is not None:
                check_float(name, g, low=0.0, high=1.0, low_inclusive=False)
        check_choice("momentum_kind", momentum_kind, ("ema", "storm"))
        for role, params in zip(_ROLES, (primal_params, dual_params), strict=True):
            if isinstance(params, torch.Tensor):
                raise TypeError(
                    f"{role}_params must be an iterable of tensors, got a single tensor; "
                    f"wrap it in a list: [{role}]"
                )
        primal, dual = list(primal_params), list(dual_params)
        for role, params in zip(_ROLES, (primal, dual), strict=True):
            if not params:
                raise ValueError(f"{role}_params is empty; give at least one tensor")
            for k, p in enumerate(params):
                if not isinstance(p, torch.Tensor):
                    raise TypeError(
                        f"{role}_params[{k}] must be a torch.Tensor, got {type(p).__name__}"
                    )
                if not p.is_floating_point():
                    raise ValueError(
                        f"{role}_params[{k}] must be floating point, got dtype {p.dtype}"
                    )
        self.network = group
        self.stacked = _is_stacked(group)
        self.compressor = compressor
        self.momentum_kind = momentum_kind
        self.tracking = bool(tracking)
        self.error_feedback = bool(error_feedback)
        self.fast = bool(fast)
        if self.stacked:
            n = group.n_nodes
            for role, params in zip(_ROLES, (primal, dual), strict=True):
                for p in params:
                    if p.dim() < 1 or p.shape[0] != n:
                        raise ValueError(
                            f"{role}_params: in a SimulatedNetwork every parameter is stacked "
                            f"on dimension 0 with {n} rows (one per node), got shape "
                            f"{tuple(p.shape)}"
                        )
        groups = [
            {"params": primal, "role": "primal", "lr": lr_primal},
            {"params": dual, "role": "dual", "lr": lr_dual},
        ]
        defaults = {
            "lr": lr_primal,
            "momentum": momentum,
            "gamma": gamma,
            "gamma_tracker": gamma_tracker,
        }
        super().__init__(groups, defaults)
        for g in self.param_groups:
            numel = self._numel(g)
            if g["gamma"] is None:
                g["gamma"] = default_gamma(compressor, numel)
            if g["gamma_tracker"] is None:
                g["gamma_tracker"] = g["gamma"]

    # ---- flattening: (n, D) in the simulation, (D,) on a process group --------------

    def _numel(self, group: dict[str, Any]) -> int:
        total = sum(p.numel() for p in group["params"])
        return total // self.network.n_nodes if self.stacked else total

    def _flat(self, tensors: list[Any]) -> Any:
        if self.stacked:
            n = self.network.n_nodes
            return torch.cat([t.detach().reshape(n, -1) for t in tensors], dim=1)
        return torch.cat([t.detach().reshape(-1) for t in tensors])

    def _unflat(self, flat: Any, params: list[Any]) -> None:
        offset = 0
        for p in params:
            width = p[0].numel() if self.stacked else p.numel()
            chunk = (
                flat[:, offset : offset + width] if self.stacked else flat[offset : offset + width]
            )
            p.copy_(chunk.reshape(p.shape))
            offset += width

    def _grads(self, group: dict[str, Any]) -> Any:
        grads = []
        for k, p in enumerate(group["params"]):
            if p.grad is None:
                raise ValueError(
                    f"{group['role']}_params[{k}] has no gradient: call backward() before "
                    "step() (a parameter the loss does not use gets a zero gradient only if "
                    "you set it)"
                )
            grads.append(p.grad)
        g = self._flat(grads)
        if not bool(torch.isfinite(g).all()):
            raise ValueError(
                f"the gradients of the {group['role']} parameters contain NaN or inf; "
                "check the loss and the step sizes"
            )
        return g

    def _state(self, group: dict[str, Any]) -> dict[str, Any]:
        return self.state[group["params"][0]]

    # ---- gossip ----------------------------------------------------------------------

    def _send(self, delta: Any) -> tuple[Any, Any]:
        """Compress ``delta``, gossip it: (what this node decodes, the mixed messages)."""
        net = self.network
        if self.stacked and self.fast and type(self.compressor) in _BATCHED:
            dense, bits = _BATCHED[type(self.compressor)](self.compressor, delta, net.generators)
            mixed = net.mix(dense)
            # net.mix counted full-precision rows; count the compressed message instead
            degree = np.array([len(net.out_neighbors(i)) for i in range(net.n_nodes)], float)
            sent = bits * degree
            net.bits_sent = net.bits_sent - net.bits_history[-1] + sent
            net.bits_history[-1] = sent
            return dense, mixed
        msg = net.compress(delta, self.compressor)
        return msg.decode(), net.mix(msg)

    def _gossip(self, st: dict[str, Any], key: str, v_half: Any, gamma: float) -> Any:
        """CHOCO round for ``v_half``: the public copy and its mix move by ``C(v_half - v_hat)``."""
        hat, mixed = f"{key}_hat", f"{key}_mix"
        if not self.error_feedback or hat not in st:
            st[hat] = torch.zeros_like(v_half)
            st[mixed] = torch.zeros_like(v_half)
        q, q_mixed = self._send(v_half - st[hat])
        st[hat] = st[hat] + q
        st[mixed] = st[mixed] + q_mixed
        return v_half + gamma * (st[mixed] - st[hat])

    # ---- the step ----------------------------------------------------------------------

    def _momentum(self, group: dict[str, Any], g: Any, g_prev: Any) -> Any:
        st, beta = self._state(group), group["momentum"]
        if "u" not in st:
            return g.clone()
        if self.momentum_kind == "storm":
            return g + beta * (st["u"] - g_prev)
        return beta * st["u"] + (1.0 - beta) * g

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:  # type: ignore[override]
        """One iteration of every node (collective on a process group).

        Args:
            closure: Re-evaluates the loss and calls ``backward()`` on the current
                minibatch (zeroing the gradients first). Optional for ``"ema"``
                (called once if given); required for ``"storm"``, where it is called
                at the current iterate and again at the previous one.

        Returns:
            The closure's loss at the current iterate, or None.

        Raises:
            ValueError: If a gradient is missing, NaN or infinite, or ``"storm"`` has
                no closure.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        elif self.momentum_kind == "storm":
            raise ValueError("momentum_kind='storm' needs step(closure) (see the docs)")
        grads = [self._grads(g) for g in self.param_groups]
        prev_grads: list[Any] = [None, None]
        if self.momentum_kind == "storm" and "x_prev" in self._state(self.param_groups[0]):
            current = [self._flat(list(g["params"])) for g in self.param_groups]
            for g in self.param_groups:
                self._unflat(self._state(g)["x_prev"], g["params"])
            with torch.enable_grad():
                closure()  # type: ignore[misc]
            prev_grads = [self._grads(g) for g in self.param_groups]
            for g, x in zip(self.param_groups, current, strict=True):
                self._unflat(x, g["params"])
        for group, g, g_prev in zip(self.param_groups, grads, prev_grads, strict=True):
            st = self._state(group)
            x = self._flat(list(group["params"]))
            u_new = self._momentum(group, g, g_prev)
            u_old = st.get("u", torch.zeros_like(u_new))
            if self.tracking:
                z_half = st.get("z", torch.zeros_like(u_new)) + u_new - u_old
                direction = self._gossip(st, "z", z_half, group["gamma_tracker"])
                st["z"] = direction
            else:
                direction = u_new
            st["u"] = u_new
            if self.momentum_kind == "storm":
                st["x_prev"] = x.clone()
            sign = -1.0 if group["role"] == "primal" else 1.0
            x_half = x + sign * group["lr"] * direction
            self._unflat(self._gossip(st, "x", x_half, group["gamma"]), group["params"])
        return loss

    # ---- monitoring ------------------------------------------------------------------

    def consensus_error(self, role: str = "primal") -> float:
        """``(1/n) sum_i ||v_i - v_bar||^2`` of the primal (or dual) parameters (collective)."""
        check_choice("role", role, _ROLES)
        group = self.param_groups[_ROLES.index(role)]
        return float(self.network.consensus_error(self._flat(list(group["params"]))))

    def average(self, role: str = "primal") -> list[Any]:
        """The node averages of the primal (or dual) parameters (collective on a group).

        Returns:
            One tensor per parameter, without the node dimension in the simulation.
        """
        check_choice("role", role, _ROLES)
        params = self.param_groups[_ROLES.index(role)]["params"]
        return [self.network.average(p.detach()) for p in params]

    @property
    def bits_sent(self) -> Any:
        """Bits sent so far: float64 (n,) per node in the simulation, a float on a group."""
        return self.network.bits_sent

    @property
    def uncompressed(self) -> bool:
        """Whether the compressor is the identity."""
        return isinstance(self.compressor, Identity)
