"""The headline experiment of mplus-adam: `icml26 run mplus-adam`.

Precision sweep on an MLP 784-H-H-10 trained on MNIST-5k (the core's ``load_mnist``), with
the master weights stored only in a low-precision format (bf16, fp8_e4m3, fp4_e2m1) and
the forward and backward run in fp32 on the stored values (emulation: the weights are
exactly the format's values). Methods at every format: Adam with round-to-nearest (the
failure mode), Adam with stochastic rounding, Madam-style multiplicative Adam, and M+Adam
("combined" and "fallback"); at bf16 also two peers: torch-optimi's AdamW with Kahan
summation (a second bf16 buffer: a hidden higher-precision copy) and torchao's AdamW with
bf16 stochastic rounding (``torchao.optim._AdamW(..., bf16_stochastic_round=True)``,
moments in bf16, its convention). The reference is
``torch.optim.AdamW`` with fp32 master weights; the floor is the untrained network.

Tuning (nothing tuned on what the verdicts read): each method gets the same 3-point grid,
chosen at fp32 master weights on a tuning seed (100) and a validation split (500
training digits held out); the verdicts read the final loss on 1000 test digits over the
seeds 0..n-1. Adam's ``lr`` grid; M+Adam's and Madam's ``lr_mult`` grid (M+Adam keeps
Adam's tuned ``lr``). "fallback" is tuned as "combined" (at fp32 its multiplicative
step never fires). Both rates follow one cosine schedule to zero.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from icml26_core import Claim, Experiment, Result, RunContext, Table

LR_GRID = (1e-3, 3e-3, 1e-2, 3e-2)
# The LM part (tiny Llama on Shakespeare bytes): its own grid, tuned on AdamW at fp32.
LM_LR_GRID = (1e-3, 3e-3, 1e-2, 3e-2)
LM_LR_MULT_GRID = (3e-3, 1e-2, 3e-2, 1e-1)
LM_METHODS = ("Adam-nearest", "Adam-stochastic", "M+Adam combined", "M+Adam fallback")
LM_BETAS = (0.9, 0.95)
# Relative steps must exceed half a relative ulp to survive nearest rounding
# (2^-9 = 0.002 in bf16): the grid starts above it (ours).
LR_MULT_GRID = (3e-3, 1e-2, 3e-2)
TUNING_SEEDS = (100,)
LOW_FORMATS = ("bf16", "fp8_e4m3", "fp4_e2m1")
METHODS = ("Adam-nearest", "Adam-stochastic", "Madam", "M+Adam combined", "M+Adam fallback")
KAHAN = "optimi AdamW Kahan"
TORCHAO = "torchao AdamW bf16-SR"
# The peers run at bf16 only: both act on real torch.bfloat16 tensors.
PEERS = (KAHAN, TORCHAO)
REFERENCE = "AdamW fp32 master"
FLOOR = "untrained (floor)"


def _data(seed_split: int = 12345) -> dict[str, Any]:
    import torch
    from icml26_core.datasets import load_mnist

    X, y = load_mnist()
    perm = np.random.default_rng(seed_split).permutation(len(y))
    test, val, train = perm[:1000], perm[1000:1500], perm[1500:]
    t = lambda idx: (torch.from_numpy(X[idx]), torch.from_numpy(y[idx]))  # noqa: E731
    return {"train": t(train), "val": t(val), "test": t(test)}


def _init(seed: int, hidden: int, dtype: Any) -> list[Any]:
    import torch

    torch.manual_seed(seed)
    layers = [
        torch.nn.Linear(784, hidden),
        torch.nn.Linear(hidden, hidden),
        torch.nn.Linear(hidden, 10),
    ]
    params = []
    for lin in layers:
        params += [lin.weight.detach().clone(), lin.bias.detach().clone()]
    return [p.to(dtype).requires_grad_(True) for p in params]


def _forward(params: list[Any], x: Any) -> Any:
    import torch

    h = x
    n = len(params) // 2
    for i in range(n):
        w, b = params[2 * i].float(), params[2 * i + 1].float()  # fp32 compute on stored values
        h = torch.nn.functional.linear(h, w, b)
        if i < n - 1:
            h = torch.relu(h)
    return h


def _loss(params: list[Any], split: tuple[Any, Any]) -> tuple[float, float]:
    import torch

    with torch.no_grad():
        logits = _forward(params, split[0])
        loss = torch.nn.functional.cross_entropy(logits, split[1]).item()
        acc = (logits.argmax(1) == split[1]).float().mean().item()
    return loss, acc


def _torchao_sr_adamw(params: list[Any], lr: float, betas: tuple[float, float]) -> Any:
    """The torchao peer: AdamW with bf16 stochastic rounding (beside Adam-stochastic).

    ``torchao.optim._AdamW`` (torchao 0.18) keeps its moments in the parameters' dtype
    (bf16 here) and compiles its step with ``torch.compile`` (on CPU too); its ``lr`` is a
    tensor, so schedules must ``fill_`` it.
    """
    from torchao.optim import _AdamW

    return _AdamW(params, lr=lr, betas=betas, weight_decay=0.0, bf16_stochastic_round=True)


def _optimizer(
    method: str, fmt: str, params: list[Any], lr: float, lr_mult: float, seed: int
) -> Any:
    import torch

    from mplus_adam import LowPrecisionAdam, Madam, MPlusAdam

    common = dict(master_format=fmt, block_size=32, moment_dtype=torch.float32, seed=seed)
    if method == REFERENCE:
        return torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    if method == KAHAN:
        import optimi

        return optimi.AdamW(params, lr=lr, weight_decay=0.0, kahan_sum=True, foreach=False)
    if method == TORCHAO:
        return _torchao_sr_adamw(params, lr, (0.9, 0.999))
    if method == "Adam-nearest":
        return LowPrecisionAdam(params, lr=lr, rounding="nearest", **common)
    if method == "Adam-stochastic":
        return LowPrecisionAdam(params, lr=lr, rounding="stochastic", **common)
    if method == "Madam":
        return Madam(params, lr_mult=lr_mult, **common)
    mode = "combined" if method == "M+Adam combined" else "fallback"
    return MPlusAdam(params, lr=lr, lr_mult=lr_mult, mode=mode, **common)


def train(
    method: str,
    fmt: str,
    *,
    seed: int,
    data: dict[str, Any],
    lr: float,
    lr_mult: float,
    steps: int,
    hidden: int,
    batch: int = 64,
    eval_split: str = "test",
) -> dict[str, Any]:
    """Train one MLP; return final loss/accuracy on ``eval_split``, stuck rates, bytes."""
    import torch

    from mplus_adam import binned_stuck, state_bytes

    dtype = torch.bfloat16 if fmt == "bf16" else torch.float32
    params = _init(seed, hidden, dtype)
    opt = _optimizer(method, fmt, params, lr, lr_mult, seed)
    for g in opt.param_groups:
        g["lr0"], g["lr_mult0"] = float(g["lr"]), g.get("lr_mult", 0.0)
    Xtr, ytr = data["train"]
    gen = torch.Generator().manual_seed(seed)
    stuck = [torch.zeros(p.shape, dtype=torch.int32) for p in params]
    for t in range(steps):
        f = 0.5 * (1.0 + math.cos(math.pi * t / steps))
        for g in opt.param_groups:
            if isinstance(g["lr"], torch.Tensor):  # torchao keeps lr as a tensor
                g["lr"].fill_(g["lr0"] * f)
            else:
                g["lr"] = g["lr0"] * f
            if "lr_mult" in g:
                g["lr_mult"] = g["lr_mult0"] * f
        idx = torch.randint(0, len(ytr), (batch,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(_forward(params, Xtr[idx]), ytr[idx])
        loss.backward()
        before = [p.detach().clone() for p in params]
        # read before the step: optimi's step overwrites the gradient buffer in place
        moved = [p.grad != 0 for p in params]
        opt.step()
        for s, p, b, g in zip(stuck, params, before, moved, strict=True):
            s += ((p.detach() == b) & g).to(torch.int32)
    for g in opt.param_groups:
        g.pop("lr0"), g.pop("lr_mult0")
    loss, acc = _loss(params, data[eval_split])
    if not math.isfinite(loss):
        loss = float("nan")
    rates = torch.cat([s.flatten().float() / steps for s in stuck])
    weights = torch.cat([p.detach().float().flatten() for p in params])
    _, deciles = binned_stuck(weights, rates, bins=10)
    nbytes = state_bytes(opt)
    comp = sum(
        v.numel() * v.element_size()
        for st in opt.state.values()
        for k, v in st.items()
        if isinstance(v, torch.Tensor) and k == "kahan_comp"
    )
    return {
        "loss": loss,
        "acc": acc,
        "stuck_mean": rates.mean().item(),
        "stuck_deciles": [float(d) for d in deciles],
        "master_bytes": nbytes["master"],
        "weight_bytes": nbytes["master"] + comp,  # master + hidden compensation copy
        "state_bytes": nbytes["state"],
    }


def _tune(
    ctx: RunContext, data: dict[str, Any], steps: int, hidden: int, lr_grid: Any, mult_grid: Any
) -> dict[str, dict[str, float]]:
    """Best grid point per method family at fp32, on the validation split and tuning seeds."""

    def score(method: str, lr: float, lr_mult: float) -> float:
        vals = [
            train(
                method,
                "fp32",
                seed=s,
                data=data,
                lr=lr,
                lr_mult=lr_mult,
                steps=steps,
                hidden=hidden,
                eval_split="val",
            )["loss"]
            for s in TUNING_SEEDS
        ]
        return float(np.nanmean(vals)) if not all(np.isnan(vals)) else float("inf")

    jobs = [("adam", lr, 0.0) for lr in lr_grid]
    out: dict[str, dict[str, float]] = {}
    scores = {j: score("Adam-nearest", j[1], 0.0) for j in ctx.progress(jobs, "tuning Adam lr")}
    best_lr = min(scores, key=scores.get)[1]
    out["adam"] = {"lr": best_lr, "lr_mult": 0.0, "val_loss": min(scores.values())}
    for fam, method in (("mplus", "M+Adam combined"), ("madam", "Madam")):
        s = {m: score(method, best_lr, m) for m in ctx.progress(mult_grid, f"tuning {method}")}
        best = min(s, key=s.get)
        out[fam] = {"lr": best_lr if fam == "mplus" else 0.0, "lr_mult": best, "val_loss": s[best]}
    return out


def _setting(method: str, tuned: dict[str, dict[str, float]]) -> tuple[float, float]:
    if method.startswith("M+Adam"):
        return tuned["mplus"]["lr"], tuned["mplus"]["lr_mult"]
    if method == "Madam":
        return 0.0, tuned["madam"]["lr_mult"]
    return tuned["adam"]["lr"], 0.0


class _BothRates:
    """Warm-up + cosine on ``lr`` and, by the same factor, on ``lr_mult``.

    The core's ``cosine_schedule`` (a LambdaLR) scales ``lr`` only.
    """

    def __init__(self, optimizer: Any, total_steps: int) -> None:
        from icml26_core.lm import cosine_schedule

        self.sched = cosine_schedule(
            optimizer, warmup_steps=max(1, total_steps // 10), total_steps=total_steps
        )
        self.groups = optimizer.param_groups
        self.mult0 = [g.get("lr_mult", 0.0) for g in self.groups]
        self._sync()

    def _sync(self) -> None:
        for g, m0 in zip(self.groups, self.mult0, strict=True):
            if "lr_mult" in g:
                g["lr_mult"] = m0 * g["lr"] / g["initial_lr"]

    def step(self) -> None:
        self.sched.step()
        self._sync()


def _lm_optimizer(method: str, fmt: str, params: Any, lr: float, lr_mult: float, seed: int) -> Any:
    import torch

    from mplus_adam import LowPrecisionAdam, MPlusAdam

    common = dict(
        betas=LM_BETAS, master_format=fmt, block_size=32, moment_dtype=torch.float32, seed=seed
    )
    if method == REFERENCE:
        return torch.optim.AdamW(params, lr=lr, betas=LM_BETAS, weight_decay=0.0)
    if method == "Adam-nearest":
        return LowPrecisionAdam(params, lr=lr, rounding="nearest", **common)
    if method == "Adam-stochastic":
        return LowPrecisionAdam(params, lr=lr, rounding="stochastic", **common)
    if method == KAHAN:
        import optimi

        return optimi.AdamW(
            params, lr=lr, betas=LM_BETAS, weight_decay=0.0, kahan_sum=True, foreach=False
        )
    if method == TORCHAO:
        return _torchao_sr_adamw(params, lr, LM_BETAS)
    if method in ("M+Adam combined", "M+Adam fallback"):
        mode = "combined" if method == "M+Adam combined" else "fallback"
        return MPlusAdam(params, lr=lr, lr_mult=lr_mult, mode=mode, **common)
    raise ValueError(f"method must be one of {(REFERENCE, *LM_METHODS, *PEERS)}, got {method!r}")


class _LMStep:
    """The LM's optimizer as ``train_lm`` sees it: counts the updates rounded away.

    The model stays fp32 (forward and backward in fp32 on the stored values). Our
    optimizers round the fp32 tensors onto their format's grid themselves; the peers
    (optimi Kahan, torchao SR) only act on real ``torch.bfloat16`` tensors, so for them
    ``bf16_masters=True`` keeps bf16 master tensors, hands them the gradient rounded to
    bf16 (what a bf16 model would give them), steps them and writes them back into the
    model, whose fp32 tensors then hold exactly the bf16 values (no extra precision).
    ``stuck`` counts, per coordinate, the steps with a nonzero gradient after which the
    stored weight did not change.
    """

    def __init__(self, params: list[Any], build: Any, *, bf16_masters: bool) -> None:
        import torch

        self.params = params
        self.masters: list[Any] | None = None
        if bf16_masters:
            self.masters = [p.detach().to(torch.bfloat16).requires_grad_(True) for p in params]
            with torch.no_grad():
                for p, m in zip(params, self.masters, strict=True):
                    p.copy_(m)
        self.inner = build(params if self.masters is None else self.masters)
        self.stuck = [torch.zeros(p.shape, dtype=torch.int32) for p in params]
        self.steps = 0

    @property
    def param_groups(self) -> Any:
        return self.inner.param_groups

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params + (self.masters or []):
            p.grad = None

    def step(self, closure: Any = None) -> None:
        import torch

        before = [p.detach().clone() for p in self.params]
        # read before the step: optimi's step overwrites the gradient buffer in place
        moved = [None if p.grad is None else p.grad != 0 for p in self.params]
        if self.masters is None:
            self.inner.step()
        else:
            for p, m in zip(self.params, self.masters, strict=True):
                m.grad = None if p.grad is None else p.grad.to(torch.bfloat16)
            self.inner.step()
            with torch.no_grad():
                for p, m in zip(self.params, self.masters, strict=True):
                    p.copy_(m)
        for s, p, b, g in zip(self.stuck, self.params, before, moved, strict=True):
            if g is not None:
                s += ((p.detach() == b) & g).to(torch.int32)
        self.steps += 1

    def weight_bytes(self) -> int:
        """Bytes of the master weights and of any compensation (Kahan) buffer."""
        import torch

        from mplus_adam import state_bytes

        comp = sum(
            v.numel() * v.element_size()
            for st in self.inner.state.values()
            for k, v in st.items()
            if isinstance(v, torch.Tensor) and k == "kahan_comp"
        )
        return state_bytes(self.inner)["master"] + comp


def lm_data(n_val: int | None = None) -> dict[str, Any]:
    """Shakespeare bytes: the train split and the validation split cut in two halves.

    The first half is for tuning, the second for the verdicts (``n_val`` caps each half).
    """
    from icml26_core.datasets import load_text

    corpus = load_text("shakespeare")
    train_tok, val = corpus.tokens("train"), corpus.tokens("validation")
    half = len(val) // 2
    n = half if n_val is None else min(half, n_val)
    return {"train": train_tok, "tune": val[:n], "test": val[half : half + n]}


def train_lm_run(
    method: str,
    fmt: str,
    *,
    seed: int,
    data: dict[str, Any],
    lr: float,
    lr_mult: float,
    steps: int,
    batch: int,
    seq_len: int,
    eval_batches: int,
    size: str = "1M",
    eval_split: str = "test",
) -> dict[str, Any]:
    """Train ``tiny_llama(size)`` through the core's ``train_lm``.

    The forward runs in fp32 on the stored values. Returns the final loss on
    ``eval_split`` (nats/byte), the stuck shares (all, and per decile of the final
    ``|w|``) and the bytes per parameter of the master weights and any Kahan buffer.
    """
    from icml26_core.lm import tiny_llama, train_lm

    from mplus_adam import binned_stuck

    if method in PEERS and fmt != "bf16":
        raise ValueError(f"fmt must be 'bf16' for the peer {method!r}, got {fmt!r}")
    model = tiny_llama(size, vocab_size=256, seed=seed, max_seq_len=max(seq_len, 64))
    opt = _LMStep(
        list(model.parameters()),
        lambda ps: _lm_optimizer(method, fmt, ps, lr, lr_mult, seed),
        bf16_masters=method in PEERS,
    )
    hist = train_lm(
        model,
        data["train"],
        data[eval_split],
        steps=steps,
        batch_size=batch,
        seq_len=seq_len,
        optimizer=opt,
        scheduler=lambda o: _BothRates(o.inner, steps),
        eval_every=steps,
        eval_batches=eval_batches,
        seed=seed,
    )
    loss = float(hist.val_loss[-1]) if not hist.diverged else float("nan")
    if not math.isfinite(loss):
        loss = float("nan")
    import torch

    n_params = sum(p.numel() for p in opt.params)
    rates = torch.cat([s.flatten().float() / max(opt.steps, 1) for s in opt.stuck])
    weights = torch.cat([p.detach().float().flatten() for p in opt.params])
    _, deciles = binned_stuck(weights, rates, bins=10)
    return {
        "loss": loss,
        "diverged": bool(hist.diverged),
        "weight_bytes_per_param": opt.weight_bytes() / n_params,
        "n_params": n_params,
        "stuck_mean": rates.mean().item(),
        "stuck_deciles": [float(d) for d in deciles],
    }


def _unigram_floor(data: dict[str, Any]) -> tuple[float, float]:
    """(uniform byte loss ln 256, unigram cross-entropy on the test half; add-one counts)."""
    counts = np.bincount(np.asarray(data["train"]), minlength=256).astype(float) + 1.0
    logp = np.log(counts / counts.sum())
    test = np.asarray(data["test"])
    return math.log(256.0), float(-logp[test].mean())


def _lower(statement: str, ours: list[float], other: list[float], names: Any, metric: str) -> Claim:
    """``ours`` reaches a lower value of ``metric`` than ``other``: paired one-sided t."""
    return Claim.superior(
        statement, ours, other, names=names, metric=metric, higher_is_better=False, test="t"
    )


def _precision_claims(titles: dict[str, str], formats: Any, part: Any) -> list[Claim]:
    """Claims 1/2 (MLP) and 6/7 (LM), built by one function.

    At each format of ``titles`` that was run, M+Adam beats Adam-nearest and
    Adam-stochastic; ``part(fmt, other)`` builds each half.
    """
    return [
        Claim.all_of(title, [part(fmt, "Adam-nearest"), part(fmt, "Adam-stochastic")])
        for fmt, title in titles.items()
        if fmt in formats
    ]


def _stuck_claim(title: str, nearest: list[dict[str, Any]], mplus: list[dict[str, Any]]) -> Claim:
    """Claims 3 (MLP) and 10 (LM): stuck shares by ``|w|`` decile.

    Adam-nearest's stuck share rises from the bottom to the top ``|w|`` decile, and
    M+Adam's top-decile share is lower than Adam-nearest's.
    """
    top_adam = [r["stuck_deciles"][-1] for r in nearest]
    bot_adam = [r["stuck_deciles"][0] for r in nearest]
    top_mp = [r["stuck_deciles"][-1] for r in mplus]
    return Claim.all_of(
        title,
        [
            Claim.superior(
                "Adam-nearest: top-decile stuck share > bottom-decile's.",
                top_adam,
                bot_adam,
                names=("top |w| decile", "bottom |w| decile"),
                metric="share of steps whose update was rounded away",
                test="t",
            ),
            _lower(
                "M+Adam's top-decile stuck share < Adam-nearest's.",
                top_mp,
                top_adam,
                ("M+Adam", "Adam-nearest"),
                "top-decile stuck share",
            ),
        ],
    )


def _rounding_ablation(
    title: str,
    ref: list[float],
    mp32: list[float],
    mp_bf16: list[float],
    adam_bf16: list[float],
    metric: str,
) -> Claim:
    """Claims 5 (MLP) and 8 (LM): the rounding ablation.

    M+Adam's loss increase from fp32 to bf16 master weights is smaller than Adam's
    (Adam-nearest bf16 minus fp32 AdamW), paired by seed.
    """
    cost_mp = [b - a for a, b in zip(mp32, mp_bf16, strict=True)]
    cost_adam = [b - a for a, b in zip(ref, adam_bf16, strict=True)]
    return _lower(title, cost_mp, cost_adam, ("M+Adam bf16 - fp32", "Adam bf16 - fp32"), metric)


def run_lm(ctx: RunContext) -> tuple[list[Table], list[Claim], dict[str, Any]]:
    """The language-model part: AdamW fp32 master vs low-precision masters."""
    n_seeds = ctx.pick(smoke=5, default=5, full=10)
    steps = ctx.pick(smoke=6, default=128, full=2000)
    batch = ctx.pick(smoke=4, default=8, full=16)
    seq_len = ctx.pick(smoke=32, default=64, full=128)
    eval_batches = ctx.pick(smoke=2, default=16, full=32)
    size = ctx.pick(smoke="1M", default="1M", full="30M")
    formats = ctx.pick(smoke=("bf16",), default=("bf16",), full=("bf16", "fp8_e4m3"))
    lr_grid = ctx.pick(smoke=(1e-2,), default=LM_LR_GRID, full=LM_LR_GRID)
    mult_grid = ctx.pick(smoke=(1e-2,), default=LM_LR_MULT_GRID, full=LM_LR_MULT_GRID)
    data = lm_data(n_val=ctx.pick(smoke=4096, default=None, full=None))
    kw = dict(
        data=data, steps=steps, batch=batch, seq_len=seq_len, eval_batches=eval_batches, size=size
    )

    def score(method: str, lr: float, lr_mult: float) -> float:
        vals = [
            train_lm_run(method, "fp32", seed=s, lr=lr, lr_mult=lr_mult, eval_split="tune", **kw)[
                "loss"
            ]
            for s in TUNING_SEEDS
        ]
        return float(np.nanmean(vals)) if not all(np.isnan(vals)) else float("inf")

    lr_scores = {lr: score(REFERENCE, lr, 0.0) for lr in ctx.progress(lr_grid, "LM: tuning lr")}
    best_lr = min(lr_scores, key=lambda k: lr_scores[k])
    mult_scores = {
        m: score("M+Adam combined", best_lr, m) for m in ctx.progress(mult_grid, "LM: lr_mult")
    }
    best_mult = min(mult_scores, key=lambda k: mult_scores[k])
    # M+Adam at fp32 too: is its gain from rounding or from its update rule? (claim 8)
    runs = [(REFERENCE, "fp32"), ("M+Adam combined", "fp32")]
    runs += [(m, f) for f in formats for m in LM_METHODS]
    runs += [(m, "bf16") for m in PEERS if "bf16" in formats]
    res: dict[tuple[str, str], list[dict[str, Any]]] = {r: [] for r in runs}
    for (method, fmt), seed in ctx.progress(
        [(r, s) for s in range(n_seeds) for r in runs], "LM: training runs"
    ):
        mult = best_mult if method.startswith("M+Adam") else 0.0
        res[(method, fmt)].append(
            train_lm_run(method, fmt, seed=seed, lr=best_lr, lr_mult=mult, **kw)
        )
    uniform, unigram = _unigram_floor(data)

    def col(method: str, fmt: str) -> list[float]:
        return [r["loss"] for r in res[(method, fmt)]]

    ref = col(REFERENCE, "fp32")
    table = Table(
        f"Language model: tiny_llama({size!r}) on Shakespeare bytes, {steps} steps of "
        f"{batch}x{seq_len} bytes: final held-out validation loss (nats/byte), mean over seeds",
        [
            "format",
            "method",
            "lr",
            "lr_mult",
            "val loss",
            "gap to fp32 AdamW",
            "diverged",
            "stuck (all)",
            "stuck (top decile of abs w)",
            "weight bytes/param",
            "n",
        ],
    )
    for name, val in (("uniform bytes (floor)", uniform), ("unigram bytes (floor)", unigram)):
        table.add_row(
            format="-",
            method=name,
            lr=0.0,
            lr_mult=0.0,
            **{
                "val loss": val,
                "gap to fp32 AdamW": val - float(np.mean(ref)),
                "diverged": 0,
                "stuck (all)": float("nan"),
                "stuck (top decile of abs w)": float("nan"),
                "weight bytes/param": float("nan"),
                "n": 1,
            },
        )
    for method, fmt in runs:
        loss = col(method, fmt)
        table.add_row(
            format=fmt,
            method=method,
            lr=best_lr,
            lr_mult=best_mult if method.startswith("M+Adam") else 0.0,
            **{
                "val loss": float(np.nanmean(loss)),
                "gap to fp32 AdamW": float(np.nanmean(loss) - np.mean(ref)),
                "diverged": sum(r["diverged"] for r in res[(method, fmt)]),
                "stuck (all)": float(np.mean([r["stuck_mean"] for r in res[(method, fmt)]])),
                "stuck (top decile of abs w)": float(
                    np.mean([r["stuck_deciles"][-1] for r in res[(method, fmt)]])
                ),
                "weight bytes/param": res[(method, fmt)][0]["weight_bytes_per_param"],
                "n": len(loss),
            },
        )
    tune_table = Table(
        "Language model: tuned at fp32 master weights (first half of the validation split, "
        "tuning seed 100): AdamW's lr, then M+Adam's lr_mult at that lr",
        ["parameter", "value", "validation loss"],
    )
    for lr, v in lr_scores.items():
        tune_table.add_row(parameter="lr", value=lr, **{"validation loss": v})
    for m, v in mult_scores.items():
        tune_table.add_row(parameter="lr_mult", value=m, **{"validation loss": v})

    def loss_claim(fmt: str, other: str) -> Claim:
        return _lower(
            f"LM at {fmt}: M+Adam (combined) reaches a lower validation loss than {other}.",
            col("M+Adam combined", fmt),
            col(other, fmt),
            (f"M+Adam {fmt}", f"{other} {fmt}"),
            "final held-out validation loss (nats/byte)",
        )

    claims = _precision_claims(
        {
            "bf16": "6. Language model (tiny Llama, Shakespeare bytes): at bf16 master weights, "
            "M+Adam's validation-loss gap to fp32-master AdamW is smaller than Adam-nearest's "
            "and Adam-stochastic's (claim 1 on the LM).",
            "fp8_e4m3": "7. Language model: at fp8 (e4m3) master weights, M+Adam beats "
            "Adam-nearest and Adam-stochastic (claim 2 on the LM).",
        },
        formats,
        loss_claim,
    )
    claims.append(
        _rounding_ablation(
            "8. Ablation on the LM (ours): M+Adam's loss increase from fp32 to bf16 master "
            "weights is smaller than Adam's (Adam-nearest bf16 minus fp32 AdamW), i.e. its "
            "gain at bf16 comes from surviving the rounding, not only from its update rule.",
            col(REFERENCE, "fp32"),
            col("M+Adam combined", "fp32"),
            col("M+Adam combined", "bf16"),
            col("Adam-nearest", "bf16"),
            "validation-loss increase from fp32 to bf16 master (nats/byte)",
        )
    )
    claims.append(
        Claim.all_of(
            "9. Peers on the LM at bf16: M+Adam reaches a lower validation loss than "
            "torch-optimi's Kahan-summation AdamW and torchao's stochastic-rounding AdamW.",
            [loss_claim("bf16", KAHAN), loss_claim("bf16", TORCHAO)],
        )
    )
    claims.append(
        _stuck_claim(
            "10. On the LM at bf16, Adam-nearest's stuck fraction rises with |w| (top |w| "
            "decile > bottom decile), and M+Adam's is lower in the top decile (claim 3 on "
            "the LM).",
            res[("Adam-nearest", "bf16")],
            res[("M+Adam combined", "bf16")],
        )
    )
    out = {
        "lr_scores": {str(k): v for k, v in lr_scores.items()},
        "lr_mult_scores": {str(k): v for k, v in mult_scores.items()},
        "runs": {f"{m} | {f}": v for (m, f), v in res.items()},
        "floor": {"uniform": uniform, "unigram": unigram},
        "steps": steps,
        "batch": batch,
        "seq_len": seq_len,
        "size": size,
    }
    return [table, tune_table], claims, out


def run(ctx: RunContext) -> Result:
    """Measure the claims at ``ctx.scale`` and decide them with the core's builders."""
    import torch

    torch.set_num_threads(1)
    n_seeds = ctx.pick(smoke=5, default=5, full=10)
    steps = ctx.pick(smoke=25, default=300, full=600)
    hidden = ctx.pick(smoke=16, default=64, full=256)
    formats = ctx.pick(smoke=("bf16",), default=LOW_FORMATS, full=LOW_FORMATS)
    lr_grid = ctx.pick(smoke=(1e-3,), default=LR_GRID, full=LR_GRID)
    mult_grid = ctx.pick(smoke=(1e-2,), default=LR_MULT_GRID, full=LR_MULT_GRID)
    data = _data()
    tuned = _tune(ctx, data, steps, hidden, lr_grid, mult_grid)
    seeds = list(range(n_seeds))
    runs: list[tuple[str, str]] = [(REFERENCE, "fp32"), ("M+Adam combined", "fp32")]
    for fmt in formats:
        runs += [(m, fmt) for m in METHODS]
        if fmt == "bf16":
            runs += [(m, fmt) for m in PEERS]
    res: dict[tuple[str, str], list[dict[str, Any]]] = {r: [] for r in runs}
    jobs = [(r, s) for s in seeds for r in runs]
    for (method, fmt), seed in ctx.progress(jobs, "training runs"):
        lr, lr_mult = _setting(method, tuned)
        res[(method, fmt)].append(
            train(
                method,
                fmt,
                seed=seed,
                data=data,
                lr=lr,
                lr_mult=lr_mult,
                steps=steps,
                hidden=hidden,
            )
        )
    floor = [_loss(_init(s, hidden, torch.float32), data["test"]) for s in seeds]

    def col(method: str, fmt: str, key: str) -> list[float]:
        return [r[key] for r in res[(method, fmt)]]

    ref = col(REFERENCE, "fp32", "loss")
    table = Table(
        f"MNIST-5k MLP 784-{hidden}-{hidden}-10, {steps} steps: final test loss (nats) per "
        f"master format and method, mean over seeds",
        [
            "format",
            "method",
            "lr",
            "lr_mult",
            "test loss",
            "gap to fp32 AdamW",
            "test acc",
            "stuck (all)",
            "stuck (top decile of abs w)",
            "weight bytes/param",
            "n",
        ],
    )
    n_params = sum(p.numel() for p in _init(0, hidden, torch.float32))
    table.add_row(
        format="-",
        method=FLOOR,
        lr=0.0,
        lr_mult=0.0,
        **{
            "test loss": float(np.mean([f[0] for f in floor])),
            "gap to fp32 AdamW": float(np.mean([f[0] for f in floor]) - np.mean(ref)),
            "test acc": float(np.mean([f[1] for f in floor])),
            "stuck (all)": float("nan"),
            "stuck (top decile of abs w)": float("nan"),
            "weight bytes/param": float("nan"),
            "n": len(floor),
        },
    )
    for method, fmt in runs:
        lr, lr_mult = _setting(method, tuned)
        loss = col(method, fmt, "loss")
        table.add_row(
            format=fmt,
            method=method,
            lr=lr,
            lr_mult=lr_mult,
            **{
                "test loss": float(np.mean(loss)),
                "gap to fp32 AdamW": float(np.mean(loss) - np.mean(ref)),
                "test acc": float(np.mean(col(method, fmt, "acc"))),
                "stuck (all)": float(np.mean(col(method, fmt, "stuck_mean"))),
                "stuck (top decile of abs w)": float(
                    np.mean([r["stuck_deciles"][-1] for r in res[(method, fmt)]])
                ),
                "weight bytes/param": res[(method, fmt)][0]["weight_bytes"] / n_params,
                "n": len(loss),
            },
        )
    tune_table = Table(
        "Tuned at fp32 master weights (validation split, tuning seed 100)",
        ["family", "lr", "lr_mult", "validation loss"],
    )
    for fam, s in tuned.items():
        tune_table.add_row(
            family=fam, lr=s["lr"], lr_mult=s["lr_mult"], **{"validation loss": s["val_loss"]}
        )

    def loss_claim(fmt: str, other: str) -> Claim:
        return _lower(
            f"At {fmt}, M+Adam (combined) reaches a lower test loss than {other}.",
            col("M+Adam combined", fmt, "loss"),
            col(other, fmt, "loss"),
            (f"M+Adam {fmt}", f"{other} {fmt}"),
            "final test loss (nats)",
        )

    claims = _precision_claims(
        {
            "bf16": "1. At bf16 master weights, M+Adam's test-loss gap to fp32-master AdamW is "
            "smaller than Adam-nearest's and Adam-stochastic's (MLP; claim 6 is the LM).",
            "fp8_e4m3": "2. At fp8 (e4m3) master weights, M+Adam beats Adam-nearest and "
            "Adam-stochastic (MLP; claim 7 is the LM).",
        },
        formats,
        loss_claim,
    )
    claims.append(
        _stuck_claim(
            "3. At bf16, Adam-nearest's stuck fraction rises with |w| (top |w| decile > bottom "
            "decile), and M+Adam's is lower in the top decile.",
            res[("Adam-nearest", "bf16")],
            res[("M+Adam combined", "bf16")],
        )
    )
    claims.append(
        _rounding_ablation(
            "5. Ablation (ours): M+Adam's win at bf16 comes from rounding, not from a larger "
            "step: its loss increase from fp32 to bf16 master weights is smaller than Adam's "
            "(Adam-nearest bf16 minus fp32 AdamW).",
            ref,
            col("M+Adam combined", "fp32", "loss"),
            col("M+Adam combined", "bf16", "loss"),
            col("Adam-nearest", "bf16", "loss"),
            "test-loss increase from fp32 to bf16 master (nats)",
        )
    )
    wb = {
        m: res[(m, "bf16")][0]["weight_bytes"] for m in ("M+Adam combined", "Adam-nearest", KAHAN)
    }
    claims.append(
        Claim.check(
            "4. M+Adam stores no high-precision copy: its weight bytes (master + any compensation "
            "buffer) are <= Adam's at bf16, and optimi's Kahan AdamW's are larger.",
            "bytes of master weights + compensation buffers (moments, kept by all, excluded): "
            "M+Adam <= Adam-nearest < optimi Kahan",
            {
                "M+Adam": wb["M+Adam combined"],
                "Adam-nearest": wb["Adam-nearest"],
                "optimi Kahan": wb[KAHAN],
            },
            lambda v: v["M+Adam"] <= v["Adam-nearest"] < v["optimi Kahan"],
        )
    )
    notes = [
        "Emulation: the forward and backward run in fp32 on the stored values; bf16 weights "
        "are real torch.bfloat16 tensors, fp8/fp4 weights are float32 tensors holding exactly "
        "the format's values (power-of-two scale per block of 32). Moments are fp32 for ours, "
        "bf16 for optimi and torchao (their convention, on bf16 parameters).",
        "Stuck: a coordinate's update at a step is 'stuck' when its gradient is nonzero and the "
        "stored weight did not change; shares are over all steps, binned by final |w| deciles.",
    ]
    data_out = {
        "tuned": tuned,
        "runs": {f"{m} | {f}": v for (m, f), v in res.items()},
        "floor": floor,
        "steps": steps,
        "hidden": hidden,
    }
    lm_tables, lm_claims, lm_out = run_lm(ctx)
    claims += lm_claims
    data_out["lm"] = lm_out
    notes.append(
        "Language model: tiny_llama in fp32 (forward and backward in fp32 on the stored "
        "values: the low-precision masters are fp32 tensors holding exactly bf16 values), "
        "trained by the core's train_lm (gradient norm clipped to 1, warm-up 10% then cosine "
        "to 0.1x on lr and lr_mult alike, betas (0.9, 0.95), no weight decay, fp32 moments). "
        "Tuning reads the first half of the validation split, the verdicts the second half. "
        "The peers (optimi Kahan, torchao SR) act only on torch.bfloat16 tensors: on the LM "
        "they step bf16 master tensors with the gradient rounded to bf16, written back into "
        "the fp32 model after each step; they use AdamW's tuned lr."
    )
    return Result(tables=[table, tune_table, *lm_tables], claims=claims, notes=notes, data=data_out)


EXPERIMENT = Experiment(
    name="mplus-adam",
    title="M+Adam: additive plus multiplicative Adam for low-precision master weights",
    claim=(
        "With only bf16/fp8/fp4 master weights, M+Adam trains better than low-precision Adam "
        "(nearest or stochastic rounding), whose updates stall at large |w|."
    ),
    run=run,
)
