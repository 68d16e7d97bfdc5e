"""Decentralized optimization plumbing: topologies, mixing matrices, gossip, compression.

- Topologies and their mixing matrices (:mod:`~icml26_core.decentralized.mixing`,
  numpy + networkx): :func:`topology`, :func:`mixing_matrix`,
  :func:`one_peer_exponential`, :func:`check_mixing_matrix`, :func:`spectrum`.
- One gossip interface, two backends that give the same numbers:
  :class:`SimulatedNetwork` (all nodes on one process, stacked on dimension 0, gossip
  is ``W @ X``; numpy or torch) and :class:`GossipGroup` (one node per process over
  ``torch.distributed``, neighbour exchange by ``batch_isend_irecv``), with
  :func:`init_distributed` for ``torchrun`` and :func:`spawn_local` for local runs and
  tests. Both have ``mix(x, W=None)``, ``compress(x, compressor)``, ``average``,
  ``consensus_error``, ``bits_sent`` and ``rounds``.
- Compression operators (:mod:`~icml26_core.decentralized.compression`, torch):
  :class:`TopK`, :class:`RandomK`, :class:`QSGD`, :class:`ScaledSign`,
  :class:`Identity`, each with ``bits(d)`` and its contraction factor ``delta(d)``.

An algorithm written once against ``network.mix`` and ``network.compress`` runs on
both backends: in the simulation its tensors carry a leading node dimension, on a
process group they are the node's own. Importing this package is cheap; networkx
and torch load on first use (``pip install 'icml26-core[decentralized]'``).

Example (CHOCO-style compressed gossip on a simulated ring):
    >>> import torch
    >>> from icml26_core.decentralized import SimulatedNetwork, TopK, mixing_matrix, topology
    >>> net = SimulatedNetwork(mixing_matrix(topology("ring", 8)), seed=0)
    >>> x = torch.randn(8, 100, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    >>> x_hat, s = torch.zeros_like(x), torch.zeros_like(x)   # public copies, sum_j W_ij x_hat_j
    >>> start = net.consensus_error(x)
    >>> for _ in range(300):
    ...     q = net.compress(x - x_hat, TopK(0.1))
    ...     x_hat, s = x_hat + q.decode(), s + net.mix(q)
    ...     x = x + 0.2 * (s - x_hat)
    >>> net.consensus_error(x) < 1e-3 * start, net.rounds
    (True, 300)
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "MIXING_RULES": "mixing",
    "TOPOLOGIES": "mixing",
    "Spectrum": "mixing",
    "check_mixing_matrix": "mixing",
    "default_mixing_atol": "mixing",
    "mixing_matrix": "mixing",
    "one_peer_exponential": "mixing",
    "spectrum": "mixing",
    "topology": "mixing",
    "SimulatedNetwork": "simulated",
    "StackedMessage": "simulated",
    "node_seed": "simulated",
    "Compressor": "compression",
    "Identity": "compression",
    "Message": "compression",
    "QSGD": "compression",
    "RandomK": "compression",
    "ScaledSign": "compression",
    "TopK": "compression",
    "GossipGroup": "distributed",
    "init_distributed": "distributed",
    "spawn_local": "distributed",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'icml26_core.decentralized' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"icml26_core.decentralized.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
