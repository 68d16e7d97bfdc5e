"""The GPU checks of pogo-optim in one prepared script (about 3-5 minutes on one GPU).

Not run where the package was developed (no GPU there). On a machine with CUDA:

    uv run python packages/pogo-optim/benchmarks/gpu_check.py --out results/gpu_check

1. the ``gpu``-marked tests (CUDA-graph capture of a capturable step, no host syncs,
   foreach = loop on CUDA in float32 / bfloat16 / complex64, agreement with pogo-torch);
2. the paper's speed claim at scale: time per Procrustes iteration (forward, backward,
   step) of POGO against geoopt (RiemannianAdam, RiemannianSGD), torch's orthogonal
   parametrization, Landing and the authors' pogo-torch, for ``B`` square matrices,
   each pair timed interleaved with ``compare_times`` after a warm-up; the claim
   "an order of magnitude faster than geoopt" is decided with ``Claim.faster``
   (``at_least=10``) at the largest ``B``;
3. many small layers (200 and 1000 separate 64x64 weights): foreach vs the loop per
   parameter vs pogo-torch;
4. a captured CUDA graph of a capturable step against the eager step.

Writes ``gpu_check.md`` and ``gpu_check.json`` in ``--out``; a section that would
overrun ``--budget`` seconds is skipped and listed as such.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
from icml26_core.experiment import Claim
from icml26_core.timing import compare_times

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from bench_many_layers import compare as many_layers  # noqa: E402
from bench_many_layers import markdown as many_layers_markdown  # noqa: E402
from pogo_optim import POGO  # noqa: E402
from pogo_optim._methods import MethodSpec, _NoOpRunner, methods  # noqa: E402
from pogo_optim._procrustes import loss_of, problem  # noqa: E402


def _tests(out: Path) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(HERE.parent / "tests" / "test_gpu.py"),
        "-m",
        "gpu",
        "-q",
        "-p",
        "no:cacheprovider",
        "--no-header",
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    (out / "gpu_tests.log").write_text(proc.stdout + proc.stderr)
    tail = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    return {"returncode": proc.returncode, "summary": tail, "seconds": time.perf_counter() - t0}


def _scale(sizes, repeats, deadline, log, device="cuda") -> tuple[list[dict], list[str]]:
    specs = methods(sgd_lrs=(0.1,), adam_lrs=(1e-3,), vadam_lrs=(0.05,))
    specs.append(MethodSpec("forward+backward only (floor)", (0.0,), _NoOpRunner))
    ours, others = specs[0], specs[1:]
    rows, skipped = [], []
    for k, batch in sizes:
        a, b, x0, _ = problem(batch, k, seed=batch, device=device)
        loss_fn = loss_of(a, b)
        for spec in others:
            if time.perf_counter() > deadline:
                skipped.append(f"{spec.name} at {batch} x {k}x{k}")
                continue
            try:
                r_ours, r_them = ours.build(x0, ours.lrs[0]), spec.build(x0, spec.lrs[0])
                cmp = compare_times(
                    lambda r=r_ours, f=loss_fn: r.step(f),
                    lambda r=r_them, f=loss_fn: r.step(f),
                    repeats=repeats,
                    warmup=2,
                    names=("POGO", spec.name),
                    device=device,
                )
            except torch.cuda.OutOfMemoryError:
                skipped.append(f"{spec.name} at {batch} x {k}x{k} (out of memory)")
                torch.cuda.empty_cache()
                continue
            ev = cmp.speedup(at_least=10.0 if spec.name.startswith("geoopt") else 1.0)
            rows.append(
                {
                    "k": k,
                    "batch": batch,
                    "method": spec.name,
                    "pogo_ms": 1e3 * cmp.median_a,
                    "method_ms": 1e3 * cmp.median_b,
                    "speedup": ev.effect,
                    "ci": [ev.ci_low, ev.ci_high],
                    "times_pogo": list(cmp.times_a),
                    "times_method": list(cmp.times_b),
                }
            )
            log(f"  {batch} x {k}x{k}: {spec.name}: {ev.summary()}")
            del r_ours, r_them
            if device == "cuda":
                torch.cuda.empty_cache()
    return rows, skipped


def _graph(layers: int, size: int, repeats: int) -> dict:
    gen = torch.Generator(device="cuda").manual_seed(0)
    params = [
        torch.nn.Parameter(
            torch.linalg.qr(torch.randn(size, size, device="cuda", generator=gen))[0]
        )
        for _ in range(layers)
    ]
    for p in params:
        p.grad = torch.randn_like(p) / size
    opt = POGO(params, lr=torch.tensor(0.01, device="cuda"), capturable=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        opt.step()
    cmp = compare_times(
        graph.replay,
        opt.step,
        repeats=repeats,
        warmup=2,
        names=("CUDA graph replay", "eager capturable step"),
        device="cuda",
    )
    ev = cmp.speedup()
    return {
        "layers": layers,
        "size": size,
        "graph_ms": 1e3 * cmp.median_a,
        "eager_ms": 1e3 * cmp.median_b,
        "speedup": ev.effect,
        "ci": [ev.ci_low, ev.ci_high],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/gpu_check")
    ap.add_argument("--budget", type=float, default=270.0, help="seconds for the timings")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--skip-tests", action="store_true")
    ap.add_argument(
        "--dry-run",
        action="store_true",
        help="tiny sizes on the CPU, to check the script itself where there is no GPU",
    )
    args = ap.parse_args(argv)
    device = "cpu" if args.dry_run else "cuda"
    if args.dry_run:
        torch.set_num_threads(1)  # tiny sizes: intra-op threads only add barriers
    if not args.dry_run and not torch.cuda.is_available():
        print("no CUDA device: nothing to check (use --dry-run to exercise the script)")
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []

    def log(msg: str) -> None:
        print(msg, flush=True)
        lines.append(msg)

    t_start = time.perf_counter()
    report: dict = {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu (dry run)",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }
    log(
        f"# pogo-optim GPU check: {report['device']}, torch {report['torch']}, "
        f"CUDA {report['cuda']}"
    )
    if not args.skip_tests and not args.dry_run:
        report["tests"] = _tests(out)
        log(f"\ngpu tests: {report['tests']['summary']} (exit {report['tests']['returncode']})")
    deadline = time.perf_counter() + args.budget
    sizes = [(64, 1000), (64, 5000), (64, 20000), (256, 1000)]
    if args.dry_run:
        sizes = [(8, 4), (8, 16)]
    log("\n## Procrustes time per iteration on CUDA (POGO vs each, interleaved)")
    rows, skipped = _scale(sizes, args.repeats, deadline - 60, log, device)
    report["scale"], report["skipped"] = rows, skipped
    largest = max((r for r in rows if r["k"] == 64), key=lambda r: r["batch"], default=None)
    if largest is not None:
        big = largest["batch"]
        parts = [
            Claim.faster(
                f"POGO >= 10x faster per iteration than {r['method']} at {big} x 64x64",
                r["times_pogo"],
                r["times_method"],
                at_least=10.0,
                names=("POGO", r["method"]),
                paired=True,
            )
            for r in rows
            if r["k"] == 64 and r["batch"] == big and r["method"].startswith("geoopt")
        ]
        if parts:
            claim = Claim.all_of(
                f"With {big} orthogonal 64x64 matrices POGO is an order of "
                "magnitude faster per iteration than geoopt (CUDA).",
                parts,
            )
            report["claim"] = claim.to_dict()
            log(f"\nclaim: {claim.verdict.upper()}: {claim.statement}")
            for part in parts:
                log(f"  {part.verdict}: {part.summary()}")
    log("\n## Many separate layers: foreach vs loop per parameter vs pogo-torch")
    layer_rows = []
    for layers in (200, 1000) if not args.dry_run else (5,):
        if time.perf_counter() > deadline - 20:
            skipped.append(f"many layers x {layers}")
            continue
        layer_rows += many_layers(
            layers, 64 if not args.dry_run else 8, device, repeats=args.repeats
        )
    report["many_layers"] = layer_rows
    log(many_layers_markdown(layer_rows) if layer_rows else "(skipped)")
    log("\n## CUDA graph of a capturable step (200 layers of 64x64)")
    if args.dry_run:
        skipped.append("CUDA graph (dry run)")
    elif time.perf_counter() < deadline:
        report["graph"] = _graph(200, 64, args.repeats)
        g = report["graph"]
        log(
            f"graph replay {g['graph_ms']:.3g} ms vs eager {g['eager_ms']:.3g} ms: "
            f"{g['speedup']:.3g}x [{g['ci'][0]:.3g}, {g['ci'][1]:.3g}]"
        )
    else:
        skipped.append("CUDA graph")
    log("\n## Table: Procrustes ms per iteration")
    log("| B x k | method | method ms | POGO ms | time / POGO's [95% CI] |")
    log("|---|---|---|---|---|")
    for r in rows:
        log(
            f"| {r['batch']} x {r['k']}x{r['k']} | {r['method']} | {r['method_ms']:.3g} | "
            f"{r['pogo_ms']:.3g} | {r['speedup']:.3g} [{r['ci'][0]:.3g}, {r['ci'][1]:.3g}] |"
        )
    if skipped:
        log("\nskipped (budget or memory): " + "; ".join(skipped))
    report["seconds"] = time.perf_counter() - t_start
    log(f"\ntotal {report['seconds']:.0f} s")
    (out / "gpu_check.md").write_text("\n".join(lines) + "\n")
    (out / "gpu_check.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    return 0 if report.get("tests", {}).get("returncode", 0) == 0 else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
