"""Gossip over ``torch.distributed``: one node per process, neighbour exchange only.

:class:`GossipGroup` is the real backend: each process (rank ``i`` of ``n``, started
by ``torchrun`` or :func:`spawn_local`) holds its own node's tensor, and
``group.mix(x)`` returns ``sum_j W_ij x_j`` after exchanging ``x`` with its
neighbours only, by ``torch.distributed.batch_isend_irecv`` (gloo on CPU, NCCL on
GPU), waiting on every request before it returns (an ``isend`` left unwaited makes
gloo fail with "Connection closed by peer", pytorch#78514). There is no home-made
transport and no all-reduce in ``mix``. Compressed messages travel as one uint8
buffer per neighbour and are decoded on receipt with the same code as in
:class:`~icml26_core.decentralized.SimulatedNetwork`, so both backends give the same
numbers.

Starting it:

.. code-block:: bash

    torchrun --nproc-per-node 4 train.py      # in train.py: init_distributed(); GossipGroup(W)

and, for tests and local runs, :func:`spawn_local` starts ``n`` processes on
loopback (gloo) and returns what each returned, within a time limit.
"""

from __future__ import annotations

import os
import queue as queue_mod
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from icml26_core._lazy import require
from icml26_core.decentralized.compression import Message
from icml26_core.decentralized.mixing import check_mixing_matrix
from icml26_core.decentralized.simulated import _neighbors, node_seed
from icml26_core.validation import check_choice, check_float, check_int

torch = require("torch", "decentralized")
dist = torch.distributed

__all__ = ["GossipGroup", "init_distributed", "spawn_local"]


def init_distributed(backend: str | None = None, *, timeout_s: float = 600.0) -> tuple[int, int]:
    """Join the process group that ``torchrun`` set up (no-op when already joined).

    Args:
        backend: ``"gloo"``, ``"nccl"``, or None: NCCL when CUDA is available, else
            gloo. With NCCL the process uses GPU ``LOCAL_RANK``.
        timeout_s: Timeout of collective operations, seconds.

    Returns:
        ``(rank, world_size)``.

    Raises:
        RuntimeError: If torch.distributed is unavailable, or the environment lacks
            ``MASTER_ADDR``/``MASTER_PORT``/``RANK``/``WORLD_SIZE`` (start the script
            with ``torchrun``, or use :func:`spawn_local`).
    """
    if not dist.is_available():
        raise RuntimeError("torch.distributed is not available in this torch build")
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    missing = [
        v for v in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE") if v not in os.environ
    ]
    if missing:
        raise RuntimeError(
            f"environment variables {missing} are not set: start with torchrun "
            "(torchrun --nproc-per-node N script.py) or use spawn_local"
        )
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    check_choice("backend", backend, ("gloo", "nccl"))
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
    return dist.get_rank(), dist.get_world_size()


class GossipGroup:
    """This process's node in a gossip network over ``torch.distributed``.

    Node ``i`` is the process of rank ``i`` in the (default) process group, so the
    world size must equal the number of nodes of ``W``. Every method that
    communicates is collective: all ranks call it in the same order.

    Args:
        W: Doubly stochastic mixing matrix (n, n), the same on every rank (checked
            with ``check_mixing_matrix(W, symmetric=False)``).
        seed: Seed of this node's compression generator (``node_seed(seed, rank)``,
            as in :class:`SimulatedNetwork`).
        group: A process group (default: the world). Node ``i`` is group rank ``i``.

    Attributes:
        n_nodes: Number of nodes (the world size).
        rank: This node.
        bits_sent: Bits this node has sent so far (a float).
        rounds: Number of gossip rounds.
        bits_history: Bits this node sent in each round.
        generator: This node's CPU ``torch.Generator``.

    Raises:
        RuntimeError: If the process group is not initialized (call
            :func:`init_distributed` first).
        ValueError: If ``W`` is invalid, or its size does not match the world size.
    """

    def __init__(self, W: Any, *, seed: int = 0, group: Any = None) -> None:
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError(
                "torch.distributed is not initialized: call init_distributed() (under "
                "torchrun) or run inside spawn_local before creating a GossipGroup"
            )
        self._W = check_mixing_matrix(W, symmetric=False)
        self._W.setflags(write=False)
        self.n_nodes = self._W.shape[0]
        self.group = group
        world = dist.get_world_size(group)
        if world != self.n_nodes:
            raise ValueError(
                f"the world size is {world} but W has {self.n_nodes} nodes; start "
                f"{self.n_nodes} processes or use a {world}-node topology"
            )
        self.rank = dist.get_rank(group)
        self.seed = check_int("seed", seed, low=0)
        self.generator = torch.Generator().manual_seed(node_seed(self.seed, self.rank))
        out, inn = _neighbors(self._W)
        self._out, self._in = out[self.rank], inn[self.rank]
        self.bits_sent = 0.0
        self.rounds = 0
        self.bits_history: list[float] = []

    @property
    def W(self) -> np.ndarray:
        """The mixing matrix, float64 (n, n), read-only."""
        return self._W

    def out_neighbors(self) -> list[int]:
        """Nodes that receive this node's messages."""
        return list(self._out)

    def in_neighbors(self) -> list[int]:
        """Nodes whose messages this node receives."""
        return list(self._in)

    def _peer(self, node: int) -> int:
        return node if self.group is None else dist.get_global_rank(self.group, node)

    def _exchange(self, payload: Any, out: list[int], inn: list[int]) -> dict[int, Any]:
        """Send ``payload`` to ``out`` and receive a like tensor from each of ``inn``."""
        received = {j: torch.empty_like(payload) for j in inn}
        ops = [dist.P2POp(dist.isend, payload, self._peer(k), self.group) for k in out]
        ops += [dist.P2POp(dist.irecv, received[j], self._peer(j), self.group) for j in inn]
        if ops:
            for request in dist.batch_isend_irecv(ops):
                request.wait()
        return received

    def mix(self, x: Any, *, W: Any = None) -> Any:
        """One gossip round: ``sum_j W_ij x_j`` for this node ``i``.

        Args:
            x: This node's tensor (any shape; the same shape and dtype on every rank),
                sent at full precision, or a :class:`Message` from :meth:`compress`
                (sent as one buffer, decoded on receipt, its bits counted).
            W: A different mixing matrix for this round, the same on every rank
                (doubly stochastic; one round need not be connected).

        Returns:
            The mixed tensor (decoded messages mixed, for a :class:`Message`).

        Raises:
            ValueError: If ``W`` is invalid.
        """
        M = self._W
        out, inn = self._out, self._in
        if W is not None:
            M = check_mixing_matrix(W, symmetric=False, connected=False)
            if M.shape != self._W.shape:
                raise ValueError(f"W must be ({self.n_nodes}, {self.n_nodes}), got {M.shape}")
            o, i = _neighbors(M)
            out, inn = o[self.rank], i[self.rank]
        row = M[self.rank]
        if isinstance(x, Message):
            received = self._exchange(x.to_bytes(), out, inn)
            own = x.decode()
            bits = float(x.bits)
            others = {j: x.from_bytes(buf).decode() for j, buf in received.items()}
        else:
            if not isinstance(x, torch.Tensor):
                raise TypeError(f"x must be a torch.Tensor or a Message, got {type(x).__name__}")
            own = x.contiguous()
            received = self._exchange(own, out, inn)
            bits = float(own.numel() * own.element_size() * 8)
            others = received
        result = own * float(row[self.rank])
        for j in sorted(others):
            result = result + others[j] * float(row[j])
        sent = bits * len(out)
        self.bits_sent += sent
        self.rounds += 1
        self.bits_history.append(sent)
        return result

    def compress(self, x: Any, compressor: Any) -> Message:
        """Compress this node's tensor with its own generator (pass it to :meth:`mix`)."""
        return compressor.compress(x, self.generator)

    def average(self, x: Any) -> Any:
        """The node average ``x_bar`` (an all-reduce; collective)."""
        total = x.detach().clone()
        dist.all_reduce(total, group=self.group)
        return total / self.n_nodes

    def consensus_error(self, x: Any) -> float:
        """``(1/n) sum_i ||x_i - x_bar||^2`` (two all-reduces; collective)."""
        diff = (x.detach() - self.average(x)).double()
        sq = (diff * diff).sum().reshape(1)
        dist.all_reduce(sq, group=self.group)
        return float(sq) / self.n_nodes

    def gather_bits_sent(self) -> np.ndarray:
        """Every node's ``bits_sent``, float64 (n,) (an all-gather; collective)."""
        device = "cuda" if dist.get_backend(self.group) == "nccl" else "cpu"
        mine = torch.tensor([self.bits_sent], dtype=torch.float64, device=device)
        parts = [torch.empty_like(mine) for _ in range(self.n_nodes)]
        dist.all_gather(parts, mine, group=self.group)
        return torch.cat(parts).cpu().numpy()

    def __repr__(self) -> str:
        return f"GossipGroup(rank={self.rank}, n_nodes={self.n_nodes}, rounds={self.rounds})"


# ---- local multi-process runs ---------------------------------------------------------


def _plain(value: Any) -> Any:
    """Tensors to numpy arrays, recursively, so results pickle without shared memory."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    return value


def _loopback() -> str | None:
    return {"linux": "lo", "darwin": "lo0"}.get(sys.platform)


def _child(
    rank: int,
    world: int,
    init_file: str,
    backend: str,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    queue: Any,
    threads: int,
    timeout_s: float,
) -> None:
    try:
        iface = _loopback()
        if iface and backend == "gloo":
            os.environ.setdefault("GLOO_SOCKET_IFNAME", iface)
        torch.set_num_threads(threads)
        dist.init_process_group(
            backend,
            init_method=f"file://{init_file}",
            rank=rank,
            world_size=world,
            timeout=timedelta(seconds=timeout_s),
        )
        out = _plain(fn(rank, world, *args))
    except BaseException:
        # Report first: the peers then fail on the closed connection, and the parent
        # should see this rank's error before theirs.
        queue.put((rank, False, traceback.format_exc()))
        return
    try:
        dist.barrier()
        dist.destroy_process_group()
    except BaseException:
        queue.put((rank, False, traceback.format_exc()))
        return
    queue.put((rank, True, out))


def _failures(rank: int, first: str, queue: Any, grace_s: float = 1.0) -> str:
    """The first failure and any that follow within ``grace_s``, the first one on top."""
    failed = [(rank, first)]
    end = time.monotonic() + grace_s
    while time.monotonic() < end:
        try:
            r, ok, value = queue.get(timeout=max(0.01, end - time.monotonic()))
        except queue_mod.Empty:
            break
        if not ok:
            failed.append((r, value))
    return "\n".join(f"spawn_local: rank {r} raised:\n{tb}" for r, tb in failed)


def spawn_local(
    fn: Callable[..., Any],
    world_size: int,
    *,
    args: tuple[Any, ...] = (),
    backend: str = "gloo",
    timeout_s: float = 120.0,
    start_method: str | None = None,
    threads: int = 1,
) -> list[Any]:
    """Run ``fn(rank, world_size, *args)`` in ``world_size`` processes joined by torch.distributed.

    The processes meet through a file store in a temporary folder (no port is
    chosen) and talk over loopback (``GLOO_SOCKET_IFNAME=lo`` unless set). Each
    returns ``fn``'s value (tensors converted to numpy arrays) through a queue.

    Args:
        fn: Called in each process after ``init_process_group``; its return value must
            pickle. With the ``"spawn"`` start method it must be importable
            (a module-level function of an installed module).
        world_size: Number of processes, >= 1.
        args: Further arguments of ``fn`` (pickled for ``"spawn"``).
        backend: ``"gloo"`` (CPU) or ``"nccl"`` (one GPU per process).
        timeout_s: Wall-clock limit for the whole run, seconds; on expiry every
            process is killed and ``TimeoutError`` raised.
        start_method: ``"fork"`` or ``"spawn"``; default ``"fork"`` on Linux for
            gloo when CUDA is not initialized (children start in well under a
            second, instead of importing torch again), else ``"spawn"``.
        threads: ``torch.set_num_threads`` in each process (1 avoids oversubscribing
            a small machine and is what forked torch processes need).

    Returns:
        The values of ``fn``, ordered by rank.

    Raises:
        RuntimeError: If a process raises (the message holds its traceback first, then
            those of ranks that failed within a second after it) or dies.
        TimeoutError: If the run exceeds ``timeout_s``.
    """
    import multiprocessing as mp

    world_size = check_int("world_size", world_size, low=1)
    check_choice("backend", backend, ("gloo", "nccl"))
    timeout_s = check_float("timeout_s", timeout_s, low=0.0, low_inclusive=False)
    threads = check_int("threads", threads, low=1)
    if start_method is None:
        fork_ok = sys.platform == "linux" and backend == "gloo" and not torch.cuda.is_initialized()
        start_method = "fork" if fork_ok else "spawn"
    check_choice("start_method", start_method, ("fork", "spawn", "forkserver"))
    ctx = mp.get_context(start_method)
    results: dict[int, Any] = {}
    with tempfile.TemporaryDirectory(prefix="icml26-dist-") as tmp:
        init_file = str(Path(tmp) / "store")
        queue = ctx.Queue()
        procs = [
            ctx.Process(  # type: ignore[attr-defined]
                target=_child,
                daemon=True,
                args=(
                    r,
                    world_size,
                    init_file,
                    backend,
                    fn,
                    tuple(args),
                    queue,
                    threads,
                    timeout_s,
                ),
            )
            for r in range(world_size)
        ]
        deadline = time.monotonic() + timeout_s
        try:
            for p in procs:
                p.start()
            while len(results) < world_size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"spawn_local: {world_size - len(results)} of {world_size} processes "
                        f"did not finish within {timeout_s:g} s"
                    )
                try:
                    rank, ok, value = queue.get(timeout=min(0.5, remaining))
                except queue_mod.Empty:  # check for processes that died silently
                    dead = [
                        r
                        for r, p in enumerate(procs)
                        if r not in results and p.exitcode not in (None, 0)
                    ]
                    if dead:
                        raise RuntimeError(
                            f"spawn_local: process {dead[0]} died with exit code "
                            f"{procs[dead[0]].exitcode}"
                        ) from None
                    continue
                if not ok:
                    raise RuntimeError(_failures(rank, value, queue))
                results[rank] = value
            for p in procs:
                p.join(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            for p in procs:
                if p.is_alive():
                    p.kill()
                    p.join(timeout=5)
            queue.close()
    return [results[r] for r in range(world_size)]
