"""The headline experiment of cocd: `icml26 run cocd`.

An MLP 64-32-10 (2,410 parameters) on scikit-learn's digits, trained by zeroth-order
methods at an equal number of loss queries (``k + 1 = 33`` per step for every method),
with first-order SGD and Adam at the same number of steps as references. Each method's
``lr`` is chosen from its own 5-point log grid on a validation seed that no verdict
reads; the verdicts read 5 other seeds (each seed fixes the initialisation, the batch
sequence and the methods' own random draws).
"""

from __future__ import annotations

import ctypes
import math
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from icml26_core import Claim, Experiment, Result, RunContext, Table

K = 32  # block size / directions: k + 1 = 33 queries per step for every ZO method
H = 1e-2  # finite-difference step of the main comparison
VALIDATION_SEED = 1000
HIDDEN = 32
ACC_POINTS = 7  # test-accuracy checkpoints per test-seed run (evenly spaced steps, 0 included)


# glibc mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD = 32 * 2**20  # glibc's largest allowed value on 64-bit (HEAP_MAX_SIZE / 2)
_TRIM_THRESHOLD = 512 * 2**20


def keep_freed_memory() -> bool:
    """Make glibc's malloc keep freed buffers in the process instead of returning them.

    Why: every step allocates and frees the same few-MB tensors (probe rows, dense
    directions, activations). With glibc's default thresholds they are mmapped (or the
    heap top trimmed) and handed back to the OS on free, so the next step page-faults
    them in again: the default run made ~40M minor page faults, most of its system
    CPU time. Raising the mmap threshold (to glibc's maximum, 32 MB) and the trim
    threshold (512 MB) keeps them in the heap for reuse. Process-wide; called at the
    start of :func:`run` and in each worker process, not at import. Returns whether
    both settings took; a silent no-op (False) off Linux/glibc.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only (musl has mallopt too, different codes)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) == 1
    return mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD) == 1 and ok


def _grid(lo: float, hi: float, n: int) -> list[float]:
    return [float(v) for v in np.logspace(lo, hi, n)]


# method -> (exponent range of its lr grid, kind). Grid centres from the prototype
# and the methods' scale (momentum 0.9 takes ~10x smaller steps); the validation seed picks.
METHODS: dict[str, tuple[tuple[float, float], str]] = {
    "CoCD": ((-2.5, -0.5), "zo"),
    "CoCD + momentum 0.9": ((-3.5, -1.5), "zo"),
    "CoCD normalized": ((-1.0, 1.0), "zo"),
    "CoCD, permuted order": ((-2.5, -0.5), "zo"),
    "BCCD": ((-1.0, 1.0), "zo"),
    "BCCD, permuted order": ((-1.0, 1.0), "zo"),
    "random coordinate": ((-1.0, 1.0), "zo"),
    "random subspace": ((-1.0, 1.0), "zo"),
    "SPSA (k directions)": ((-2.5, -0.5), "zo"),
    "SGD (first order)": ((-1.5, 0.5), "fo"),
    "Adam (first order)": ((-3.5, -1.5), "fo"),
}

# method -> colour, the same in every figure and panel (matplotlib's tab10 and black: 11
# methods, one more than the default colour cycle, which gave Adam CoCD's colour).
COLOURS: dict[str, str] = {
    "CoCD": "#1f77b4",
    "CoCD + momentum 0.9": "#ff7f0e",
    "CoCD normalized": "#2ca02c",
    "CoCD, permuted order": "#d62728",
    "BCCD": "#9467bd",
    "BCCD, permuted order": "#8c564b",
    "random coordinate": "#e377c2",
    "random subspace": "#7f7f7f",
    "SPSA (k directions)": "#bcbd22",
    "SGD (first order)": "#17becf",
    "Adam (first order)": "#000000",
}


# The ZO and first-order methods the MNIST-5k models run (the list; the
# permuted-order variants are our ablation, digits only).
MNIST_METHODS = (
    "CoCD",
    "CoCD + momentum 0.9",
    "CoCD normalized",
    "BCCD",
    "random coordinate",
    "random subspace",
    "SPSA (k directions)",
    "SGD (first order)",
    "Adam (first order)",
)

# method -> exponent range of its 5-point lr grid on the MNIST-5k models (the same size
# and spacing, 10^0.5, as on digits). Placed by a pilot on seed 999 (neither the
# validation nor a test seed) at the default budgets: at a fraction of a sweep the
# coordinate methods want larger steps than on digits, and CoCD's old MNIST grid had its
# best lr at its lower edge at one sweep.
MNIST_RANGES: dict[str, tuple[float, float]] = {
    "CoCD": (-3.0, -1.0),
    "CoCD + momentum 0.9": (-4.0, -2.0),
    "CoCD normalized": (0.0, 2.0),
    "BCCD": (0.0, 2.0),
    "random coordinate": (0.0, 2.0),
    "random subspace": (0.5, 2.5),
    "SPSA (k directions)": (-3.0, -1.0),
    "SGD (first order)": (-1.5, 0.5),
    "Adam (first order)": (-3.0, -1.0),
}


# On the CNN, whose cyclic sweep starts in the convolutions, the pilot saw plain CoCD
# not move at lr <= 0.01 in 200 steps (its earlier one-sweep run was best at 0.0316):
# its two grids sit half a decade higher there.
CNN_RANGES: dict[str, tuple[float, float]] = {
    "CoCD": (-2.5, -0.5),
    "CoCD + momentum 0.9": (-3.5, -1.5),
}


def _lr_range(model: str, name: str) -> tuple[float, float]:
    """The exponent range of ``name``'s lr grid on ``model``."""
    if model == "cnn-mnist" and name in CNN_RANGES:
        return CNN_RANGES[name]
    if model != "mlp-digits" and name in MNIST_RANGES:
        return MNIST_RANGES[name]
    return METHODS[name][0]


def _queries(cfg: dict[str, Any], model: str) -> int:
    """The per-run query budget of an MNIST model (an int, or a dict per model)."""
    q = cfg["mnist_queries"]
    return int(q[model]) if isinstance(q, dict) else int(q)


def _data() -> dict[str, Any]:
    """Digits scaled to [0, 1], split 80/20 by a fixed permutation (stratified)."""
    from icml26_core.datasets import load_tabular

    X, y, _ = load_tabular("digits")
    X = X / 16.0
    rng = np.random.default_rng(12345)
    test = np.zeros(len(y), dtype=bool)
    for c in range(10):
        idx = rng.permutation(np.flatnonzero(y == c))
        test[idx[: len(idx) // 5]] = True
    return {"Xtr": X[~test], "ytr": y[~test], "Xte": X[test], "yte": y[test]}


def _mnist_data() -> dict[str, Any]:
    """MNIST-5k (pixels in [0, 1]), split 80/20 by a fixed permutation (stratified)."""
    from icml26_core.datasets import load_mnist

    X, y = load_mnist()
    rng = np.random.default_rng(12345)
    test = np.zeros(len(y), dtype=bool)
    for c in range(10):
        idx = rng.permutation(np.flatnonzero(y == c))
        test[idx[: len(idx) // 5]] = True
    return {"Xtr": X[~test], "ytr": y[~test], "Xte": X[test], "yte": y[test]}


def _mlp(d_in: int, seed: int, dtype: Any) -> Any:
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d_in, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 10)).to(dtype)


# The small CNN of the MNIST models (19,754 parameters, the "~20k"): two strided
# convolutions (no pooling), then two linear layers; it takes flat 784-pixel rows.
CNN_C1, CNN_C2, CNN_HIDDEN = 4, 8, 48
CNN_FEATURES = CNN_C2 * 7 * 7


def _cnn(seed: int, dtype: Any) -> Any:
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Unflatten(1, (1, 28, 28)),
        nn.Conv2d(1, CNN_C1, 5, stride=2, padding=2),
        nn.ReLU(),
        nn.Conv2d(CNN_C1, CNN_C2, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(CNN_FEATURES, CNN_HIDDEN),
        nn.ReLU(),
        nn.Linear(CNN_HIDDEN, 10),
    ).to(dtype)


RESNET_WIDTH = 37  # the full scale's ResNet: 272,700 parameters (the abstract's ~270k)


def _resnet(seed: int, dtype: Any, width: int = RESNET_WIDTH) -> Any:
    """A small ResNet for flat 28x28 inputs, without normalization layers.

    No normalization, so that a stack of parameter vectors can go through it by
    ``vmap``: stem conv (stride 2, 14x14), two residual blocks of ``width`` channels, a
    stride-2 conv to ``2 * width`` (7x7), two residual blocks, global average pooling, a
    linear layer to 10.
    """
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.c1 = nn.Conv2d(c, c, 3, padding=1)
            self.c2 = nn.Conv2d(c, c, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x + self.c2(torch.relu(self.c1(x))))

    torch.manual_seed(seed)
    w = width
    return nn.Sequential(
        nn.Unflatten(1, (1, 28, 28)),
        nn.Conv2d(1, w, 3, stride=2, padding=1),
        nn.ReLU(),
        Block(w),
        Block(w),
        nn.Conv2d(w, 2 * w, 3, stride=2, padding=1),
        nn.ReLU(),
        Block(2 * w),
        Block(2 * w),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(2 * w, 10),
    ).to(dtype)


# model key -> (label, dataset)
MODELS: dict[str, tuple[str, str]] = {
    "mlp-digits": ("MLP 64-32-10 on digits", "digits"),
    "mlp-mnist": ("MLP 784-32-10 on MNIST-5k", "mnist"),
    "cnn-mnist": ("CNN on MNIST-5k", "mnist"),
    "resnet-mnist": ("ResNet on MNIST-5k", "mnist"),
}


def _build(model: str, seed: int, dtype: Any, width: int = RESNET_WIDTH) -> Any:
    if model == "mlp-digits":
        return _mlp(64, seed, dtype)
    if model == "mlp-mnist":
        return _mlp(784, seed, dtype)
    if model == "cnn-mnist":
        return _cnn(seed, dtype)
    if model == "resnet-mnist":
        return _resnet(seed, dtype, width)
    raise KeyError(model)


def _dim(model: str) -> int:
    import torch

    return sum(p.numel() for p in _build(model, 0, torch.float32).parameters())


def _batched(model: str, module: Any, xb: Any, yb: Any) -> Callable[[Any], Any]:
    """The batched closure of a model on the batch ``(xb, yb)``."""
    import torch.nn.functional as F

    import cocd

    if model == "mlp-digits":
        return _batched_mlp(64, xb, yb)
    if model == "mlp-mnist":
        return _batched_mlp(784, xb, yb)
    if model == "cnn-mnist":
        return _batched_cnn(xb, yb)
    # the ResNet: vmap over functional_call, 8 copies at a time (memory)
    return cocd.batched_loss(module, F.cross_entropy, xb, yb, chunk_size=8)


def _head_probes(inp: Any, head: Any, idx: Any, h: float, n_in: int, n_hid: int, yb: Any) -> Any:
    """Losses of a head ``inp -> Linear(n_in, n_hid) -> ReLU -> Linear(n_hid, 10)``.

    ``head`` holds the head's flat parameters (nn.Sequential order); returns the losses
    at ``head`` (first) and at ``head + h e_i`` for each ``i`` in ``idx`` (shape
    ``(len(idx) + 1,)``). Row 0's activations are computed once; each probe adds its
    rank-one change (a first-layer weight ``(j, i)`` moves hidden unit ``j`` by
    ``h * inp[:, i]``, a second-layer weight ``(o, j)`` moves output ``o`` by
    ``h * hidden_j``): the losses at the probed points up to round-off, about ``k``
    times fewer flops than ``k + 1`` forward passes (DeepZero's feature reuse, per
    coordinate).
    """
    import torch
    import torch.nn.functional as F

    n1 = n_hid * n_in
    n2 = n1 + n_hid
    n3 = n2 + 10 * n_hid
    m = idx.numel() + 1
    r = torch.arange(1, m, device=idx.device)
    pre = torch.addmm(head[n1:n2], inp, head[:n1].view(n_hid, n_in).T)
    pre = pre.expand(m, *pre.shape).clone()
    s = idx < n1
    c = idx[s]
    pre[r[s], :, c // n_in] += h * inp[:, c % n_in].T
    s = (idx >= n1) & (idx < n2)
    pre[r[s], :, idx[s] - n1] += h
    hid = pre.relu()
    out = torch.matmul(hid, head[n2:n3].view(10, n_hid).T) + head[n3:]
    s = (idx >= n2) & (idx < n3)
    c = idx[s] - n2
    out[r[s], :, c // n_hid] += h * hid[r[s], :, c % n_hid]
    s = idx >= n3
    out[r[s], :, idx[s] - n3] += h
    losses = F.cross_entropy(out.reshape(-1, 10), yb.repeat(m), reduction="none")
    return losses.view(m, -1).mean(dim=1)


def _batched_mlp(d_in: int, xb: Any, yb: Any) -> Callable[[Any], Any]:
    """Loss of an MLP d_in-32-10 at each row of X (flat parameters, nn.Sequential order).

    ``f.probe_coordinates(x, idx, h)`` gives the losses at ``x`` and at each
    ``x + h e_i`` without forming the rows (:func:`_head_probes`); the optimizers use it
    for forward-difference coordinate probes.
    """
    import torch
    import torch.nn.functional as F

    n1 = HIDDEN * d_in
    n2 = n1 + HIDDEN
    n3 = n2 + 10 * HIDDEN

    def f(X: torch.Tensor) -> torch.Tensor:
        m = X.shape[0]
        W1 = X[:, :n1].view(m, HIDDEN, d_in)
        hid = torch.relu(torch.matmul(xb, W1.transpose(1, 2)) + X[:, n1:n2, None].transpose(1, 2))
        W2 = X[:, n2:n3].view(m, 10, HIDDEN)
        out = torch.matmul(hid, W2.transpose(1, 2)) + X[:, n3:, None].transpose(1, 2)
        losses = F.cross_entropy(out.reshape(-1, 10), yb.repeat(m), reduction="none")
        return losses.view(m, -1).mean(dim=1)

    f.probe_coordinates = lambda x, idx, h: _head_probes(xb, x, idx, h, d_in, HIDDEN, yb)
    return f


def _batched_cnn(xb: Any, yb: Any) -> Callable[[Any], Any]:
    """Loss of the CNN at each row of X (flat parameters, nn.Sequential order).

    Rows whose convolution weights equal row 0's reuse row 0's convolution features
    (DeepZero's "feature reuse": a coordinate probe in the linear layers changes nothing
    before them); the others go through one grouped convolution. The losses are those of
    the module (tested), computed faster for coordinate probes.
    """
    import torch
    import torch.nn.functional as F

    sizes = [CNN_C1 * 25, CNN_C1, CNN_C2 * CNN_C1 * 9, CNN_C2]
    sizes += [CNN_HIDDEN * CNN_FEATURES, CNN_HIDDEN, 10 * CNN_HIDDEN, 10]
    n_conv = sum(sizes[:4])
    img = xb.view(-1, 1, 28, 28)
    B = img.shape[0]

    def conv(W: torch.Tensor) -> torch.Tensor:  # (M, n_conv) -> (M, B, features)
        M = W.shape[0]
        w1, b1, w2, b2 = torch.split(W, sizes[:4], dim=1)
        z = F.conv2d(img, w1.reshape(M * CNN_C1, 1, 5, 5), b1.reshape(-1), stride=2, padding=2)
        z = F.conv2d(
            z.relu(),
            w2.reshape(M * CNN_C2, CNN_C1, 3, 3),
            b2.reshape(-1),
            stride=2,
            padding=1,
            groups=M,
        ).relu()
        return z.view(B, M, CNN_FEATURES).transpose(0, 1)

    def f(X: torch.Tensor) -> torch.Tensor:
        M = X.shape[0]
        Wc = X[:, :n_conv]
        other = (Wc != Wc[0]).any(dim=1)
        other[0] = False
        w3, b3, w4, b4 = torch.split(X[:, n_conv:], sizes[4:], dim=1)
        base = conv(Wc[:1])[0]  # (B, features)
        if bool(other.any()):
            feats = base.expand(M, B, CNN_FEATURES).clone()
            feats[other] = conv(Wc[other])
            z = torch.baddbmm(
                b3.view(M, 1, CNN_HIDDEN),
                feats,
                w3.view(M, CNN_HIDDEN, CNN_FEATURES).transpose(1, 2),
            ).relu()
        else:  # every row has the base's features: one matmul for all rows
            z = (base @ w3.reshape(M * CNN_HIDDEN, CNN_FEATURES).T).view(B, M, CNN_HIDDEN)
            z = (z.transpose(0, 1) + b3.view(M, 1, CNN_HIDDEN)).relu()
        out = torch.baddbmm(b4.view(M, 1, 10), z, w4.view(M, 10, CNN_HIDDEN).transpose(1, 2))
        losses = F.cross_entropy(out.reshape(-1, 10), yb.repeat(M), reduction="none")
        return losses.view(M, B).mean(dim=1)

    def probe_coordinates(x: torch.Tensor, idx: torch.Tensor, h: float) -> torch.Tensor:
        if bool((idx < n_conv).any()):  # a convolution weight moves: dense rows
            X = x.repeat(idx.numel() + 1, 1)
            X[torch.arange(1, idx.numel() + 1), idx] += h
            return f(X)
        base = conv(x[None, :n_conv])[0]
        return _head_probes(base, x[n_conv:], idx - n_conv, h, CNN_FEATURES, CNN_HIDDEN, yb)

    f.probe_coordinates = probe_coordinates
    return f


def _make(name: str, params: Any, lr: float, seed: int, h: float) -> Any:
    import torch

    import cocd

    if name == "CoCD":
        return cocd.CoCD(params, lr=lr, block_size=K, fd_step=h)
    if name == "CoCD + momentum 0.9":
        return cocd.CoCD(params, lr=lr, block_size=K, fd_step=h, momentum=0.9)
    if name == "CoCD normalized":
        return cocd.CoCD(params, lr=lr, block_size=K, fd_step=h, normalize=True)
    if name == "CoCD, permuted order":
        return cocd.CoCD(params, lr=lr, block_size=K, fd_step=h, order="permuted", seed=seed)
    if name == "BCCD":
        return cocd.BCCD(params, lr=lr, block_size=K, fd_step=h)
    if name == "BCCD, permuted order":
        return cocd.BCCD(params, lr=lr, block_size=K, fd_step=h, order="permuted", seed=seed)
    if name == "random coordinate":
        return cocd.RandomCoordinate(params, lr=lr, block_size=K, fd_step=h, seed=seed)
    if name == "random subspace":
        return cocd.RandomSubspace(params, lr=lr, n_directions=K, fd_step=h, seed=seed)
    if name == "SPSA (k directions)":
        return cocd.SPSA(params, lr=lr, n_directions=K, fd_step=h, seed=seed)
    if name == "SGD (first order)":
        return torch.optim.SGD(params, lr=lr)
    if name == "Adam (first order)":
        return torch.optim.Adam(params, lr=lr)
    raise KeyError(name)


def _train(
    name: str,
    lr: float,
    seed: int,
    data: dict[str, Any],
    *,
    queries: int,
    batch: int,
    h: float = H,
    dtype: str = "float32",
    n_points: int = 12,
    acc_points: int = ACC_POINTS,
    device: str = "cpu",
    model: str = "mlp-digits",
    width: int = RESNET_WIDTH,
) -> dict[str, Any]:
    """One run; returns final train loss, test accuracy, the curves and (CoCD) smoothness.

    ``curve`` holds ``(queries, train loss)`` at ``n_points`` evenly spaced steps and
    ``acc_curve`` ``(queries, test accuracy)`` at ``acc_points`` evenly spaced steps
    (``0`` and the last step included; fewer if they coincide, none for ``0``), both
    only up to where a diverged run stopped. The checkpoints depend only on the number
    of steps, so every method at the same budget has the same ones. Evaluations are not
    loss queries and use no random numbers (the run's losses do not depend on them);
    the test set goes through the model in one batched forward (chunks of 1000 rows).
    ``model`` is a key of :data:`MODELS` (``data`` must be its dataset); ``width`` is the
    ResNet's (the tests run the full scale's code path with a tiny one).
    """
    import torch
    import torch.nn.functional as F

    dt = getattr(torch, dtype)
    Xtr = torch.as_tensor(data["Xtr"], dtype=dt, device=device)
    ytr = torch.as_tensor(data["ytr"], device=device)
    Xte = torch.as_tensor(data["Xte"], dtype=dt, device=device)
    yte = torch.as_tensor(data["yte"], device=device)
    model_key = model
    model = _build(model_key, seed, dt, width).to(device)
    params = list(model.parameters())
    opt = _make(name, params, lr, seed, h)
    first_order = METHODS[name][1] == "fo"
    steps = queries // (K + 1)
    gen = torch.Generator().manual_seed(seed)
    marks = set(np.unique(np.linspace(0, steps, n_points).astype(int)).tolist())
    acc_marks = set(np.unique(np.linspace(0, steps, acc_points).astype(int)).tolist())

    def train_loss() -> float:
        with torch.no_grad():  # in chunks of 1000 (the ResNet's activations)
            tot = sum(
                float(F.cross_entropy(model(Xtr[i : i + 1000]), ytr[i : i + 1000], reduction="sum"))
                for i in range(0, len(ytr), 1000)
            )
            return tot / len(ytr)

    def test_acc() -> float:
        with torch.no_grad():  # the whole test set at once (chunks of 1000: the ResNet)
            hits = sum(
                int((model(Xte[i : i + 1000]).argmax(1) == yte[i : i + 1000]).sum())
                for i in range(0, len(yte), 1000)
            )
            return hits / len(yte)

    curve: list[tuple[int, float]] = []
    acc_curve: list[tuple[int, float]] = []
    init = train_loss()
    smooth: list[float] = []
    snap: tuple[Any, Any] | None = None
    n_blocks = getattr(opt, "n_blocks", None) if name.startswith("CoCD") else None
    diverged = False
    t0 = time.perf_counter()
    for t in range(steps + 1):
        if t in marks:
            curve.append((t * (K + 1), train_loss()))
        if t in acc_marks:
            acc_curve.append((t * (K + 1), test_acc()))
        if t == steps:
            break
        idx = torch.randint(0, len(ytr), (batch,), generator=gen).to(device)
        xb, yb = Xtr[idx], ytr[idx]
        if first_order:
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()
        else:
            try:
                opt.step(batched_closure=_batched(model_key, model, xb, yb))
            except ValueError:
                diverged = True
                break
        if n_blocks and (t + 1) % n_blocks == 0:
            # local smoothness along the run: change of the (full, swept) estimate g per
            # unit move of x between consecutive sweep ends (from sweep 1 on)
            g = torch.cat([opt.state[p]["g"].reshape(-1) for p in params]).double()
            x = torch.cat([p.detach().reshape(-1) for p in params]).double()
            if snap is not None:
                dx = float((x - snap[1]).norm())
                if dx > 0:
                    smooth.append(float((g - snap[0]).norm()) / dx)
            snap = (g, x)
    wall = time.perf_counter() - t0
    final = train_loss()
    if diverged or not math.isfinite(final) or final > 1e3:
        diverged = True
        final = init  # a diverged run is worth no more than stopping at once
        acc = float("nan")
    else:
        acc = test_acc()
    queries_used = getattr(opt, "queries", None)
    return {
        "final": final,
        "init": init,
        "acc": acc,
        "curve": curve,
        "acc_curve": acc_curve,
        "smooth": float(np.median(smooth)) if smooth else float("nan"),
        "diverged": diverged,
        "steps": steps,
        "queries": queries_used,
        "wall": wall,
    }


def mean_curve(curves: list[list[tuple[int, float]]]) -> tuple[np.ndarray, np.ndarray]:
    """The mean over seeds of ``(queries, loss)`` curves that may differ in length.

    A diverged run stops early, so its curve has fewer points: the curves are padded
    with NaN to the longest one and averaged with ``nanmean`` (a point is the mean of
    the runs that reached it; the tables, unlike the figure, count a diverged run as its
    initial loss). Returns the longest curve's query counts and the means.
    """
    n = max((len(c) for c in curves), default=0)
    q = np.full((len(curves), n), np.nan)
    v = np.full((len(curves), n), np.nan)
    for i, c in enumerate(curves):
        if c:
            q[i, : len(c)], v[i, : len(c)] = zip(*c, strict=True)
    if n == 0:
        return np.empty(0), np.empty(0)
    longest = max(range(len(curves)), key=lambda i: len(curves[i]))
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column of NaN only: NaN
        return q[longest].copy(), np.nanmean(v, axis=0)


def curve_figure(
    panels: list[tuple[str, dict[str, list[dict[str, Any]]]]],
    key: str,
    n_seeds: int,
) -> Any:
    """One figure, one panel per model: the mean over test seeds of each method's curve.

    ``panels`` holds ``(model, {method: [run of each test seed]})``; ``key`` is
    ``"curve"`` (train loss, log scale, with the initial loss) or ``"acc_curve"`` (test
    accuracy, with chance 0.1). Means by :func:`mean_curve` (a diverged run's curve
    stops where it stopped; later points are the mean of the runs still going). Colours
    from :data:`COLOURS`; first-order references dashed.
    """
    import matplotlib.pyplot as plt

    if key not in ("curve", "acc_curve"):
        raise ValueError(f"key must be 'curve' or 'acc_curve', got {key!r}")
    acc = key == "acc_curve"
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, (model, rr) in zip(axes[0], panels, strict=True):
        for m in rr:
            q, v = mean_curve([r[key] for r in rr[m]])
            style = "--" if METHODS[m][1] == "fo" else "-"
            ax.plot(q, v, style, color=COLOURS[m], label=m, marker="o" if acc else None, ms=3)
        if acc:
            ax.axhline(0.1, color="grey", lw=0.8, label="chance (0.1)")
            ax.set_ylabel("test accuracy")
            ax.set_ylim(0.0, 1.0)
        else:
            first = next(iter(rr.values()))
            init = float(np.mean([r["init"] for r in first]))
            ax.axhline(init, color="grey", lw=0.8, label="initial loss")
            ax.set_ylabel("train loss (full train set)")
            ax.set_yscale("log")
        ax.set_xlabel("loss queries (first order: steps x 33)")
        ax.set_title(f"{MODELS[model][0]}, mean over {n_seeds} test seeds", fontsize=9)
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def _count_queries(model: str, steps: int = 3) -> dict[str, Any]:
    """Closure calls per CoCD step (Python-loop closure) on one of :data:`MODELS`."""
    import torch
    import torch.nn.functional as F

    import cocd

    net = _build(model, 0, torch.float32)
    d_in = 64 if MODELS[model][1] == "digits" else 784
    xb = torch.rand(64, d_in)
    yb = torch.randint(0, 10, (64,))
    calls = {"n": 0}

    def closure() -> float:
        calls["n"] += 1
        return float(F.cross_entropy(net(xb), yb))

    opt = cocd.CoCD(net.parameters(), lr=1e-3, block_size=K)
    per_step = []
    for _ in range(steps):
        before = calls["n"]
        opt.step(closure)
        per_step.append(calls["n"] - before)
    return {"d": opt.dim, "per_step": per_step, "counted": opt.queries}


def run(ctx: RunContext) -> Result:
    """Tune on the validation seed, measure on the test seeds, decide the four claims.

    Runs torch on one thread (restored afterwards): the models are tiny, and on a
    shared 2-core machine two threads made each step 20x slower.
    """
    import torch

    keep_freed_memory()  # the workers call it too (spawned processes)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(ctx)
    finally:
        torch.set_num_threads(threads)


# Scale -> sizes. Digits: the 60k queries at full scale, 14,850 at default; MNIST-5k:
# the 150k at full scale, 19,800 (MLP) / 9,900 (CNN) at default (2 shared CPU cores;
# the README says so).
SCALES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        digits_queries=33 * 20,
        batch=64,
        n_grid=2,
        seeds=2,
        mnist_queries=33 * 6,
        mnist_grid=2,
        mnist={
            "mlp-mnist": ("CoCD", "BCCD", "random subspace", "SPSA (k directions)"),
            "cnn-mnist": ("CoCD", "BCCD"),
        },
        workers=1,
    ),
    "default": dict(
        digits_queries=33 * 450,
        batch=64,
        n_grid=5,
        seeds=5,
        # budgets set to fit 10 CPU minutes with every method (the README)
        mnist_queries={"mlp-mnist": 33 * 600, "cnn-mnist": 33 * 300},
        mnist_grid=5,
        mnist={"mlp-mnist": MNIST_METHODS, "cnn-mnist": MNIST_METHODS},
        workers=2,
    ),
    "full": dict(
        digits_queries=33 * 1818,
        batch=256,
        n_grid=5,
        seeds=10,
        mnist_queries=33 * 4545,
        mnist_grid=5,
        mnist={m: tuple(METHODS) for m in ("mlp-mnist", "cnn-mnist", "resnet-mnist")},
        workers=1,
    ),
}


def _worker_init() -> None:
    """Set up a worker process: glibc keeps freed buffers, one torch thread."""
    import torch

    keep_freed_memory()
    torch.set_num_threads(1)


def _train_job(job: tuple[tuple[Any, ...], dict[str, Any]]) -> dict[str, Any]:
    """One :func:`_train` call in a worker process (one torch thread)."""
    import torch

    torch.set_num_threads(1)
    args, kwargs = job
    return _train(*args, **kwargs)


def _map(
    ctx: RunContext,
    jobs: list[tuple[tuple[Any, ...], dict[str, Any]]],
    label: str,
    pool: Any = None,
) -> list[dict[str, Any]]:
    """:func:`_train` over ``jobs`` (in order), in the worker processes of ``pool`` if given.

    Every run seeds itself, so the results do not depend on the worker that ran it.
    """
    if pool is None:
        return [_train_job(j) for j in ctx.progress(jobs, label)]
    return list(ctx.progress(pool.map(_train_job, jobs), label, total=len(jobs)))


def _compare(
    ctx: RunContext,
    model: str,
    data: dict[str, Any],
    names: list[str],
    n_grid: int,
    test_seeds: list[int],
    kw: dict[str, Any],
    pool: Any = None,
) -> tuple[dict[str, float], Table, dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """Each method's lr on the validation seed (its own log grid), then the test seeds."""
    label = MODELS[model][0]
    grid_table = Table(
        f"{label}, validation seed {VALIDATION_SEED}: final train loss per lr (the grid each "
        "method gets)",
        ["method", *[f"lr {i + 1}" for i in range(n_grid)], "chosen lr", "at grid edge"],
        note="cells: lr = final train loss; 'div' = diverged (counted as the initial loss)",
    )
    chosen: dict[str, float] = {}
    jobs = [(m, lr) for m in names for lr in _grid(*_lr_range(model, m), n_grid)]
    val: dict[str, list[tuple[float, dict[str, Any]]]] = {m: [] for m in names}
    out = _map(
        ctx,
        # no accuracy checkpoints on the validation seed (only the final loss is read)
        [
            ((m, lr, VALIDATION_SEED, data), dict(model=model, **{**kw, "acc_points": 0}))
            for m, lr in jobs
        ],
        f"{label}: lr grid (validation seed)",
        pool,
    )
    for (m, lr), r in zip(jobs, out, strict=True):
        val[m].append((lr, r))
    for m in names:
        runs = val[m]
        best = min(range(len(runs)), key=lambda i: runs[i][1]["final"])
        chosen[m] = runs[best][0]
        cells = {
            f"lr {i + 1}": f"{lr:.3g} = " + ("div" if r["diverged"] else f"{r['final']:.3f}")
            for i, (lr, r) in enumerate(runs)
        }
        edge = best in (0, len(runs) - 1)
        grid_table.add_row(**{"method": m, **cells, "chosen lr": chosen[m], "at grid edge": edge})

    res: dict[str, list[dict[str, Any]]] = {m: [] for m in names}
    jobs2 = [(m, s) for s in test_seeds for m in names]
    out = _map(
        ctx,
        [((m, chosen[m], s, data), dict(model=model, **kw)) for m, s in jobs2],
        f"{label}: test seeds",
        pool,
    )
    for (m, _), r in zip(jobs2, out, strict=True):
        res[m].append(r)
    validation = {m: [(lr, r["final"]) for lr, r in val[m]] for m in names}
    return chosen, grid_table, res, validation


def _main_table(
    model: str,
    dim: int,
    queries: int,
    batch: int,
    names: list[str],
    chosen: dict[str, float],
    res: dict[str, list[dict[str, Any]]],
    ytr: np.ndarray,
) -> Table:
    n = len(res[names[0]])
    steps = queries // (K + 1)
    table = Table(
        f"{MODELS[model][0]} (d = {dim:,}): {queries:,} loss queries per ZO run "
        f"({steps} steps of {K + 1}, {queries / (dim + math.ceil(dim / K)):.2g} sweeps), "
        f"batch {batch}, over {n} test seeds",
        [
            "method",
            "lr",
            "final train loss",
            "sd over seeds",
            "test accuracy",
            "diverged",
            "loss queries",
            "wall s / run",
            "n",
        ],
        note="first-order rows: same number of steps, one gradient per step (not queries); "
        "floors: the initial loss (stop at once) and the class-prior cross-entropy",
    )
    init = [r["init"] for r in res[names[0]]]
    prior = np.bincount(ytr, minlength=10) / len(ytr)
    for m in names:
        fin = [r["final"] for r in res[m]]
        table.add_row(
            **{
                "method": m,
                "lr": chosen[m],
                "final train loss": float(np.mean(fin)),
                "sd over seeds": float(np.std(fin, ddof=1)),
                "test accuracy": float(np.nanmean([r["acc"] for r in res[m]]))
                if not all(r["diverged"] for r in res[m])
                else None,
                "diverged": sum(r["diverged"] for r in res[m]),
                "loss queries": res[m][0]["queries"],
                "wall s / run": float(np.mean([r["wall"] for r in res[m]])),
                "n": n,
            }
        )
    table.add_row(
        **{
            "method": "floor: no step (initial loss)",
            "final train loss": float(np.mean(init)),
            "sd over seeds": float(np.std(init, ddof=1)),
            "test accuracy": 0.1,
            "n": n,
        }
    )
    table.add_row(
        **{
            "method": "floor: class prior (mean predictor)",
            "final train loss": float(-(prior * np.log(prior)).sum()),
            "test accuracy": 0.1,
            "n": 1,
        }
    )
    return table


def _crosscheck_zeroth_learn(blocks: int = 3) -> dict[str, Any]:
    """Our forward differences against zeroth-learn's ``PartialFiniteDifference``.

    The digits MLP in float64 at its initialisation, one fixed batch of 64: CoCD's
    estimates of its first ``blocks`` blocks in the permuted order (seed 0: coordinates
    from every layer), from its state ``g``, and zeroth-learn's
    estimate at the same indices and step, from the same per-sample losses at its own
    perturbed parameter rows.
    """
    import torch
    from zeroth.zeroth_order.gradient_estimators import PartialFiniteDifference

    import cocd

    data = _data()
    net = _mlp(64, 0, torch.float64)
    xb = torch.as_tensor(data["Xtr"][:64], dtype=torch.float64)
    yb = torch.as_tensor(data["ytr"][:64])
    per_sample = _batched_mlp_per_sample(64, xb, yb)
    opt = cocd.CoCD(net.parameters(), lr=1e-12, block_size=K, fd_step=H, order="permuted")
    ours, theirs = [], []
    for _ in range(blocks):
        idx = opt.next_block().tolist()
        x = torch.cat([p.detach().reshape(-1) for p in net.parameters()]).numpy().copy()
        pfd = PartialFiniteDifference(H, idx, x.size)
        rows = torch.as_tensor(pfd.perturb(x))
        theirs.append(pfd.get_gradient(per_sample(rows).numpy())[idx])
        opt.step(batched_closure=lambda X: per_sample(X).mean(dim=1))
        g = torch.cat([opt.state[p]["g"].reshape(-1) for p in net.parameters()])
        ours.append(g[idx].numpy())
    a, b = np.concatenate(ours), np.concatenate(theirs)
    return {
        "n": int(a.size),
        "max_abs_diff": float(np.abs(a - b).max()),
        "max_abs_estimate": float(np.abs(b).max()),
    }


def _batched_mlp_per_sample(d_in: int, xb: Any, yb: Any) -> Callable[[Any], Any]:
    """Per-sample losses (shape (m, batch)) of the MLP d_in-32-10 at each row of X."""
    import torch
    import torch.nn.functional as F

    n1 = HIDDEN * d_in
    n2 = n1 + HIDDEN
    n3 = n2 + 10 * HIDDEN

    def f(X: torch.Tensor) -> torch.Tensor:
        m = X.shape[0]
        W1 = X[:, :n1].view(m, HIDDEN, d_in)
        hid = torch.relu(torch.matmul(xb, W1.transpose(1, 2)) + X[:, n1:n2, None].transpose(1, 2))
        W2 = X[:, n2:n3].view(m, 10, HIDDEN)
        out = torch.matmul(hid, W2.transpose(1, 2)) + X[:, n3:, None].transpose(1, 2)
        losses = F.cross_entropy(out.reshape(-1, 10), yb.repeat(m), reduction="none")
        return losses.view(m, -1)

    return f


def _run(ctx: RunContext) -> Result:
    workers = SCALES[ctx.scale]["workers"]
    if workers <= 1:
        return _run_in(ctx, None)
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    # the runs are independent and seed themselves: 2 worker processes (the 2 cores)
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=mp.get_context("spawn"), initializer=_worker_init
    ) as pool:
        return _run_in(ctx, pool)


def _run_in(ctx: RunContext, pool: Any) -> Result:
    from icml26_core import stats

    cfg = SCALES[ctx.scale]
    queries, batch, n_grid = cfg["digits_queries"], cfg["batch"], cfg["n_grid"]
    test_seeds = list(range(cfg["seeds"]))
    data = _data()
    kw: dict[str, Any] = dict(queries=queries, batch=batch, device=ctx.device)
    names = list(METHODS)

    # 1-2. digits: lr per method on the validation seed, then the test seeds
    chosen, grid_table, res, validation = _compare(
        ctx, "mlp-digits", data, names, n_grid, test_seeds, kw, pool
    )

    # 3. smoothing: CoCD at its chosen lr, fd_step 1e-1 vs 1e-4, float64 (no round-off)
    smooth_runs: dict[float, list[dict[str, Any]]] = {1e-1: [], 1e-4: []}
    jobs3 = [(hh, s) for s in test_seeds for hh in smooth_runs]
    out3 = _map(
        ctx,
        [(("CoCD", chosen["CoCD"], s, data), dict(h=hh, dtype="float64", **kw)) for hh, s in jobs3],
        "fd_step 1e-1 vs 1e-4",
        pool,
    )
    for (hh, _), r in zip(jobs3, out3, strict=True):
        smooth_runs[hh].append(r)

    # 4. the MNIST-5k models at equal queries
    mnist = _mnist_data()
    mnist_out: dict[str, Any] = {}
    for model, mnames in cfg["mnist"].items():
        mkw: dict[str, Any] = dict(
            queries=_queries(cfg, model), batch=batch, device=ctx.device, n_points=7
        )
        mc, mg, mr, mv = _compare(
            ctx, model, mnist, list(mnames), cfg["mnist_grid"], test_seeds, mkw, pool
        )
        mnist_out[model] = {"chosen": mc, "grid": mg, "res": mr, "validation": mv}

    # 5. queries per step at every default model's d
    counts = {m: _count_queries(m) for m in ("mlp-digits", "mlp-mnist", "cnn-mnist")}

    # 6. our finite differences against zeroth-learn's
    xc = _crosscheck_zeroth_learn()

    n = len(test_seeds)
    main = _main_table(
        "mlp-digits", counts["mlp-digits"]["d"], queries, batch, names, chosen, res, data["ytr"]
    )
    mnist_tables = []
    for model, out in mnist_out.items():
        dim = counts[model]["d"] if model in counts else _dim(model)
        mnist_tables.append(
            _main_table(
                model,
                dim,
                _queries(cfg, model),
                batch,
                list(cfg["mnist"][model]),
                out["chosen"],
                out["res"],
                mnist["ytr"],
            )
        )
        mnist_tables.append(out["grid"])
    xc_table = Table(
        "Cross-check: our forward differences vs zeroth-learn 0.2.6's PartialFiniteDifference "
        "(digits MLP, float64, the same batch, indices and step h = 1e-2)",
        ["estimates compared", "max |ours - zeroth-learn|", "max |estimate|"],
    )
    xc_table.add_row(
        **{
            "estimates compared": xc["n"],
            "max |ours - zeroth-learn|": xc["max_abs_diff"],
            "max |estimate|": xc["max_abs_estimate"],
        }
    )
    sm_table = Table(
        f"CoCD fd_step (float64, lr {chosen['CoCD']:.3g}, {n} test seeds)",
        ["fd_step", "final train loss", "median local smoothness ||dg||/||dx||", "n"],
    )
    for hh, runs in smooth_runs.items():
        sm_table.add_row(
            **{
                "fd_step": hh,
                "final train loss": float(np.mean([r["final"] for r in runs])),
                "median local smoothness ||dg||/||dx||": float(
                    np.mean([r["smooth"] for r in runs])
                ),
                "n": len(runs),
            }
        )

    fin = {m: [r["final"] for r in res[m]] for m in names}
    mfin = {
        model: {m: [r["final"] for r in out["res"][m]] for m in out["res"]}
        for model, out in mnist_out.items()
    }
    c1_parts = [
        Claim.superior(
            f"{MODELS[model][0]}: CoCD's final train loss is lower than BCCD's.",
            f_["CoCD"],
            f_["BCCD"],
            names=("CoCD", "BCCD"),
            metric="final train loss",
            higher_is_better=False,
        )
        for model, f_ in [("mlp-digits", fin), *mfin.items()]
    ]
    c1 = Claim.all_of(
        "At equal queries, CoCD's final train loss is lower than BCCD's on every model (each "
        "at its validation-chosen lr from its own log grid).",
        c1_parts,
    )

    c5 = Claim.superior(
        "Ablation (ours): in one fixed random permutation order for both, CoCD's final "
        "train loss is lower than BCCD's.",
        fin["CoCD, permuted order"],
        fin["BCCD, permuted order"],
        names=("CoCD permuted", "BCCD permuted"),
        metric="final train loss",
        higher_is_better=False,
    )

    def sd_ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.std(a, axis=axis, ddof=1) / np.std(b, axis=axis, ddof=1)

    parts = []
    pairs = [("mlp-digits", fin, o) for o in ("SPSA (k directions)", "random subspace")]
    pairs += [
        (model, f_, o)
        for model, f_ in mfin.items()
        for o in ("SPSA (k directions)", "random subspace")
        if o in f_
    ]
    for model, f_, other in pairs:
        ev = stats.bootstrap_band(
            [np.asarray(f_["CoCD"]), np.asarray(f_[other])],
            sd_ratio,
            high=0.5,
            effect_name=f"sd(CoCD) / sd({other})",
            test="ratio of sample sds over test seeds, BCa bootstrap (unpaired)",
            paired=False,
        )
        parts.append(
            Claim.from_evidence(
                f"{MODELS[model][0]}: CoCD's final-loss spread over seeds is at most half of "
                f"{other}'s.",
                "sd ratio <= 0.5 (our threshold, from the issue): holds if its whole CI lies "
                "below 0.5, does not hold if it lies wholly above",
                ev,
                {"CoCD": f_["CoCD"], other: f_[other]},
            )
        )
    c2 = Claim.all_of(
        "Stability: CoCD's final-loss spread over seeds is at most half that of the "
        "randomized ZO methods (SPSA, random subspace).",
        parts,
    )
    c3 = Claim.check(
        "O(1) queries per step: CoCD's measured loss calls per step are k + 1, whatever d.",
        f"every measured step makes exactly k + 1 = {K + 1} closure calls at d = "
        + ", ".join(f"{c['d']:,}" for c in counts.values()),
        {f"calls per step at d = {c['d']}": c["per_step"] for c in counts.values()},
        lambda v: all(x == K + 1 for c in v.values() for x in c),
    )
    big, small = smooth_runs[1e-1], smooth_runs[1e-4]
    c4 = Claim.all_of(
        "Smoothing: a larger finite-difference step (1e-1 vs 1e-4) gives a final loss no "
        "worse and a lower local smoothness along the run.",
        [
            Claim.non_inferior(
                "fd_step 1e-1's final train loss is no worse than fd_step 1e-4's.",
                [r["final"] for r in big],
                [r["final"] for r in small],
                margin=0.02,
                names=("h=1e-1", "h=1e-4"),
                metric="final train loss",
                higher_is_better=False,
            ),
            Claim.superior(
                "fd_step 1e-1 sees a lower local smoothness ||g(x+) - g(x)|| / ||x+ - x||.",
                [r["smooth"] for r in big],
                [r["smooth"] for r in small],
                names=("h=1e-1", "h=1e-4"),
                metric="median local smoothness",
                higher_is_better=False,
            ),
        ],
    )

    figures = []
    try:
        import matplotlib

        matplotlib.use("Agg")

        panels = [("mlp-digits", res), *((m, o["res"]) for m, o in mnist_out.items())]
        for key, fname in (("curve", "loss_vs_queries"), ("acc_curve", "accuracy_vs_queries")):
            fig = curve_figure(panels, key, n)
            figures.append(ctx.save_figure(fig, fname))  # saves and closes it
    except ImportError:  # pragma: no cover - plot extra not installed
        pass

    return Result(
        tables=[main, *mnist_tables[::2], grid_table, *mnist_tables[1::2], sm_table, xc_table],
        claims=[c1, c2, c3, c4, c5],
        figures=figures,
        notes=[
            f"Each ZO step costs k + 1 = {K + 1} loss queries on one batch of {batch}; "
            "queries are counted by the optimizers.",
            "'CoCD normalized' is exactly CoCD at lr / n_blocks (n_blocks = 76); it gets "
            "BCCD's lr grid, so it is the CoCD variant at BCCD's step-size scale.",
            f"Test accuracy vs queries (figure accuracy_vs_queries): {ACC_POINTS} evenly "
            "spaced checkpoints per test-seed run (step 0 and the last included, the same "
            "for every method of a model), on the test split of the final accuracy; "
            "evaluations are not counted as queries. Both figures: mean over the test "
            "seeds; a run that diverged stops, and later points average the runs still "
            "going (the tables count a diverged run as its initial loss).",
            "Smoothness: ||g_s - g_{s-1}|| / ||x_s - x_{s-1}|| between consecutive sweep ends "
            "(g: CoCD's full estimate), median over the run.",
            "MNIST-5k models: "
            + ", ".join(f"{MODELS[m][0]} {_queries(cfg, m):,}" for m in cfg["mnist"])
            + f" loss queries per ZO run (every method the same), a {cfg['mnist_grid']}-point "
            "lr grid per method (ranges placed by a pilot on seed 999), the permuted-order "
            "ablation on digits only; see the README.",
        ],
        data={
            "chosen_lr": chosen,
            "final": fin,
            "curves": {m: [r["curve"] for r in res[m]] for m in names},
            "acc_curves": {m: [r["acc_curve"] for r in res[m]] for m in names},
            "validation": validation,
            "mnist": {
                model: {
                    "chosen_lr": out["chosen"],
                    "final": mfin[model],
                    "validation": out["validation"],
                    "curves": {m: [r["curve"] for r in out["res"][m]] for m in out["res"]},
                    "acc_curves": {m: [r["acc_curve"] for r in out["res"][m]] for m in out["res"]},
                }
                for model, out in mnist_out.items()
            },
            "crosscheck_zeroth_learn": xc,
            "smooth": {
                str(hh): [(r["final"], r["smooth"]) for r in runs]
                for hh, runs in smooth_runs.items()
            },
            "queries_per_step": counts,
        },
    )


EXPERIMENT = Experiment(
    name="cocd",
    title="Coherent Coordinate Descent: deterministic, budget-aware zeroth-order optimization",
    claim="At equal loss queries, CoCD reaches a lower train loss than block cyclic CD, "
    "with a smaller spread over seeds than randomized ZO methods.",
    run=run,
)
