"""Learning curves of the experiment's models, on validation items only.

Trains one task's model as the experiment does (``train_masked_diffusion``, AdamW,
warm-up, cosine decay over ``--steps``) and, at a few steps along the way, decodes
validation items with greedy confidence remasking (one token per step), printing the
exact accuracy and the token accuracy. The validation items are those the experiment
tunes its proposal on (``numpy.random.default_rng(seed + 250)``), never the test items
(``seed + 200``) that its claims read. This is how the default scale was chosen.

    uv run python packages/poke-smc/benchmarks/learning_curves.py sudoku --blanks 27 \
        --steps 3000 --batch 32
    uv run python packages/poke-smc/benchmarks/learning_curves.py addition --digits 4
    uv run python packages/poke-smc/benchmarks/learning_curves.py words --span 3

Points before the last are read at a higher learning rate than a run that ends there
(cosine decay), so they are pessimistic.

``--default-model N`` instead trains (or loads) the experiment's own default-scale model
of task ``N`` (0 sudoku, 1 addition, 2 words) through its cache, exactly as
``icml26 run poke-smc`` does, and scores it on validation items for each candidate
blank count (sudoku) or word length (words): the model does not depend on those, so
they are chosen here, on validation items only.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from poke_smc import (
    AdditionTask,
    MaskedDiffusionTransformer,
    ShakespeareInfill,
    SudokuTask,
    decode,
    infill,
    train_masked_diffusion,
)


def _evaluate(model, task, items) -> tuple[float, float]:
    k = items.masks_per_item
    x = torch.as_tensor(items.inputs)
    if items.prompt_len is not None:
        p = items.prompt_len
        out = decode(model, x[:, :p], x.shape[1] - p, k, "confidence").tokens.numpy()
    else:
        out = infill(model, x, k, "confidence").tokens.numpy()
    return float(task.correct(out, items).mean()), float(task.char_accuracy(out, items).mean())


def default_model(index: int) -> None:
    """Train or load the experiment's default model ``index``; score it on validation items."""
    from icml26_core.experiment import RunContext
    from poke_smc.experiment import _configs, _model

    ctx = RunContext(scale="default", device="cpu", seed=0, out_dir=".")
    cfg = _configs(ctx)[index]
    t0, c0 = time.perf_counter(), time.process_time()
    model, info = _model(cfg, ctx)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"# {cfg.task.name}: {cfg.train_steps} steps, batch {cfg.batch_size}, {info}, "
          f"wall {wall:.0f} s, cpu {cpu:.0f} s", flush=True)  # fmt: skip
    variants = {
        0: [SudokuTask(9, blanks=b) for b in (24, 27, 30, 33, 36)],
        1: [cfg.task],
        2: [ShakespeareInfill(64, s, whole_words=True) for s in (2, 3, 4)],
    }[index]
    n = 64 if index == 0 else 200
    for task in variants:
        items = task.eval_set(n, ctx.rng(250))  # the experiment's validation stream
        exact, tok = _evaluate(model, task, items)
        what = f"blanks {task.blanks}" if index == 0 else f"span {getattr(task, 'span', '-')}"
        print(f"validation {task.name} {what}: {len(items)} items, greedy confidence exact "
              f"{exact:.3f}, token accuracy {tok:.3f}", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task", nargs="?", choices=("sudoku", "addition", "words"))
    ap.add_argument("--default-model", type=int, choices=(0, 1, 2))
    ap.add_argument("--blanks", type=int, default=30)
    ap.add_argument("--digits", type=int, default=4)
    ap.add_argument("--span", type=int, default=4)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--evals", type=int, default=5, help="evaluation points")
    ap.add_argument("--items", type=int, default=100, help="validation items")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.default_model is not None:
        default_model(args.default_model)
        return
    if args.task is None:
        ap.error("give a task or --default-model")

    if args.task == "sudoku":
        task = SudokuTask(9, blanks=args.blanks)
    elif args.task == "addition":
        task = AdditionTask(args.digits)
    else:
        task = ShakespeareInfill(window=64, span=args.span, whole_words=True)
    items = task.eval_set(args.items, np.random.default_rng(args.seed + 250))
    torch.manual_seed(args.seed)
    model = MaskedDiffusionTransformer(
        task.vocab_size, task.seq_len, d_model=args.d_model, n_layers=args.layers, n_heads=4
    )
    rng = np.random.default_rng(args.seed + 100)
    marks = {args.steps * (i + 1) // args.evals for i in range(args.evals)}
    t0, cpu0 = time.perf_counter(), time.process_time()
    eval_time = [0.0, 0.0]
    print(f"# {task.name} {vars(args)}", flush=True)
    print("step  train_wall_s  train_cpu_s  exact  token_acc", flush=True)

    def report(step: int) -> None:
        e0, c0 = time.perf_counter(), time.process_time()
        model.eval()
        exact, tok = _evaluate(model, task, items)
        model.train()
        eval_time[0] += time.perf_counter() - e0
        eval_time[1] += time.process_time() - c0
        wall = time.perf_counter() - t0 - eval_time[0]
        cpu = time.process_time() - cpu0 - eval_time[1]
        print(f"{step:5d}  {wall:10.1f}  {cpu:10.1f}  {exact:.3f}  {tok:.3f}", flush=True)

    def batches(step: int):
        if step in marks:
            report(step)
        return task.train_batch(args.batch, rng)

    train_masked_diffusion(
        model, batches, args.steps, lr=args.lr, warmup=min(100, args.steps // 10),
        seed=args.seed,
    )  # fmt: skip
    report(args.steps)


if __name__ == "__main__":
    main()
