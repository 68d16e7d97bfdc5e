"""The ``icml26`` command: list, run and report the papers' experiments.

Examples:
    icml26 list
    icml26 run enmf                      # default scale, < 10 min on 2 CPU cores
    icml26 run enmf --scale smoke        # < 30 s, into results/smoke/enmf
    icml26 run --all --scale smoke
    icml26 report --readme               # results/REPORT.md and package READMEs
    icml26 data list [--kind tabular] [--check]   # datasets, models, shapes, availability
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table as RichTable

from icml26_core import registry
from icml26_core.device import DEVICE_CHOICES, resolve_device
from icml26_core.experiment import SCALES, RunContext, execute
from icml26_core.report import README_START, find_results, print_result, update_readme, write_report


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line on bad usage (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"icml26: error: {message}\n")


def _fail(message: str, code: int = 2) -> int:
    print(f"icml26: error: {message}", file=sys.stderr)
    return code


def _cmd_list(args: argparse.Namespace, console: Console) -> int:
    if not args.load:
        # metadata only: nothing is imported, so this is instant however many plugins
        table = RichTable(title="Registered experiments", title_justify="left")
        for col in ("name", "version", "package summary"):
            table.add_column(col, overflow="fold")
        for e in registry.entries():
            table.add_row(e.name, e.version, e.summary)
        console.print(table)
        console.print("[dim]`icml26 list --load` imports each experiment and shows its claim[/dim]")
        return 0
    table = RichTable(title="Registered experiments", title_justify="left")
    for col in ("name", "version", "paper", "claim"):
        table.add_column(col, overflow="fold")
    broken = 0
    for info in registry.load_all():
        if info.experiment is None:
            broken += 1
            table.add_row(info.name, info.version, "[red]failed to load[/red]", info.error or "")
        else:
            exp = info.experiment
            table.add_row(info.name, info.version, exp.title, exp.claim)
    console.print(table)
    if broken:
        console.print(f"[yellow]warning: {broken} experiment(s) failed to load[/yellow]")
    return 0


def _missing_extra(name: str) -> str | None:
    """One line saying what to install if ``name[repro]`` is incomplete here, else None."""
    dist = next((e.distribution for e in registry.entries() if e.name == name), "")
    if not dist:
        return None  # an entry point without a distribution (tests, editable oddities)
    missing = registry.missing_requirements(dist, "repro")
    if not missing:
        return None
    return (
        f"{name}: its experiment needs {', '.join(missing)}, not installed here; "
        f'install them with: pip install "{dist}[repro]"'
    )


def _run_one(name: str, args: argparse.Namespace, console: Console, out: Path) -> int:
    info = registry.load(name)
    if info.experiment is None:
        console.print(f"[red]{name}: failed to load: {info.error}[/red]")
        return 1
    ctx = RunContext(
        scale=args.scale, device=args.device, seed=args.seed, out_dir=out, console=console
    )
    console.rule(f"{name} {info.version} (scale {args.scale}, device {args.device})")
    try:
        result = execute(info.experiment, ctx, version=info.version)
    except KeyboardInterrupt:
        raise
    except Exception:
        console.print(f"[red]{name}: the experiment raised[/red]")
        console.print(traceback.format_exc(), markup=False, highlight=False)
        return 1
    print_result(result, console)
    console.print(f"[dim]{result.elapsed_s:.1f} s; results in {out}/[/dim]")
    return 0


def _cmd_run(args: argparse.Namespace, console: Console) -> int:
    # cheap checks first (names, extras), before anything imports torch
    if args.all == bool(args.name):
        return _fail("give exactly one experiment NAME, or --all")
    known = registry.names()
    names = known if args.all else [args.name]
    for n in names:
        if n not in known:
            return _fail(f"no experiment named {n!r}; registered: {', '.join(known) or 'none'}")
    problems = [m for m in map(_missing_extra, names) if m]
    if problems:
        for m in problems:
            print(f"icml26: error: {m}", file=sys.stderr)
        return 2
    try:
        args.device = resolve_device(args.device)
    except ValueError as exc:
        return _fail(str(exc))
    # Non-default scales get their own folder, so a smoke run never replaces the
    # default-scale result that `icml26 report --readme` shows.
    default_base = Path("results") if args.scale == "default" else Path("results") / args.scale
    base = Path(args.out) if args.out else default_base
    failed = []
    for n in names:
        out = base / n if (args.all or not args.out) else base
        if _run_one(n, args, console, out) != 0:
            failed.append(n)
    if failed:
        console.print(f"[red]failed: {', '.join(failed)}[/red]")
        return 1
    return 0


def _cmd_report(args: argparse.Namespace, console: Console) -> int:
    results_dir = Path(args.results)
    try:
        path = write_report(results_dir)
    except FileNotFoundError as exc:
        return _fail(str(exc))
    console.print(f"wrote {path}")
    if args.readme:
        from icml26_core.experiment import Result

        for rpath in find_results(results_dir):
            result = Result.read(rpath)
            if result.scale != "default" and not args.any_scale:
                # READMEs show the default-scale run; a smoke run must not replace it
                console.print(
                    f"[yellow]skip {result.name}: a {result.scale}-scale result; package "
                    f"READMEs show default-scale runs (--any-scale to write it anyway)[/]"
                )
                continue
            pkg = Path(args.packages) / result.name
            readme = pkg / "README.md"
            if not readme.is_file() or README_START not in readme.read_text():
                console.print(f"[yellow]skip {result.name}: no README with result markers[/]")
                continue
            figdir = pkg / "docs"
            if result.figures:
                figdir.mkdir(exist_ok=True)
                for fig in result.figures:
                    shutil.copy2(rpath.parent / fig, figdir / fig)
            changed = update_readme(readme, result, figure_prefix="docs/")
            console.print(f"{'updated' if changed else 'unchanged'} {readme}")
    return 0


def _cmd_data(args: argparse.Namespace, console: Console) -> int:
    import time

    from rich.markup import escape

    from icml26_core.datasets import list_datasets

    try:
        infos = list_datasets(args.kind)
    except ValueError as exc:
        return _fail(str(exc))
    table = RichTable(title="Datasets (icml26_core.datasets)", title_justify="left")
    for col in ("kind", "name", "shape", "available", "load with", "license"):
        table.add_column(col, overflow="fold")
    missing = failed = 0
    # --check loads every dataset (minutes on a cold cache): show which one is loading
    bar = None
    if args.check:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        bar = Progress(
            TextColumn("loading {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=console,
            transient=True,
        )
        bar.start()
        task = bar.add_task("", total=len(infos))
    for info in infos:
        if bar is not None:
            bar.update(task, description=f"{info.kind}/{info.name}")
        if info.available():
            status = "[green]yes[/green]"
            if info.detail is not None:
                try:
                    status = f"[green]yes[/green], {escape(info.detail())}"
                except Exception as exc:
                    status = f"[green]yes[/green] [yellow](status: {escape(str(exc))})[/yellow]"
            if args.check:
                start = time.perf_counter()
                try:
                    info.load()
                    status = f"[green]yes, loaded in {time.perf_counter() - start:.1f} s[/green]"
                except Exception as exc:
                    failed += 1
                    status = f"[red]load failed: {escape(f'{type(exc).__name__}: {exc}')}[/red]"
        else:
            missing += 1
            hint = escape(info.install_hint)
            status = f"[yellow]no: {hint}[/yellow]"
        if bar is not None:
            bar.advance(task)
        table.add_row(
            info.kind,
            info.name,
            escape(info.shape),
            status,
            escape(info.call),
            escape(info.license),
        )
    if bar is not None:
        bar.stop()
    console.print(table)
    console.print(
        f"[dim]{len(infos)} datasets, {len(infos) - missing} available here; "
        "every one is read from an installed package, never downloaded[/dim]"
    )
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of the ``icml26`` command."""
    p = _Parser(prog="icml26", description="Run and report the icml26-optim experiments.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    lp = sub.add_parser("list", help="list registered experiments (reads metadata only)")
    lp.add_argument(
        "--load",
        action="store_true",
        help="import each experiment to show its paper and claim (slower)",
    )
    r = sub.add_parser("run", help="run one experiment (or --all)")
    r.add_argument("name", nargs="?", help="experiment name (see `icml26 list`)")
    r.add_argument("--all", action="store_true", help="run every registered experiment")
    r.add_argument(
        "--scale",
        choices=SCALES,
        default="default",
        help="smoke (<30 s), default (<10 min on 2 CPU cores) or full (paper, GPU)",
    )
    r.add_argument("--device", default="auto", help=f"one of {DEVICE_CHOICES} or cuda:N")
    r.add_argument("--seed", type=int, default=0, help="base random seed (default 0)")
    r.add_argument(
        "--out",
        default=None,
        help="output folder (default results/NAME; results/SCALE/NAME for smoke, full)",
    )
    rep = sub.add_parser("report", help="gather results into results/REPORT.md")
    rep.add_argument("--results", default="results", help="folder of results (default results)")
    rep.add_argument(
        "--readme", action="store_true", help="also rewrite each package README's results section"
    )
    rep.add_argument(
        "--any-scale",
        action="store_true",
        help="with --readme, also write smoke- and full-scale results (default: default only)",
    )
    rep.add_argument("--packages", default="packages", help="folder of the packages")
    data = sub.add_parser("data", help="the bundled datasets and models (icml26 data list)")
    data_sub = data.add_subparsers(dest="data_command", required=True, parser_class=_Parser)
    dl = data_sub.add_parser("list", help="each dataset with its shape and availability")
    dl.add_argument(
        "--kind",
        default=None,
        help="only this kind: tabular, series, image, text, graph, power_grid, game, prompts "
        "or model",
    )
    dl.add_argument(
        "--check",
        action="store_true",
        help="also load every available dataset (exit 1 if one fails)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``icml26`` command; returns the exit status."""
    args = build_parser().parse_args(argv)
    # rich wraps to 80 columns when output is not a terminal (CI logs, `| tee`), which
    # cuts numbers in tables; give logs room instead, unless COLUMNS says otherwise.
    wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    console = Console(width=200) if wide else Console()
    if args.command == "run" and args.seed < 0:
        return _fail(f"--seed must be nonnegative, got {args.seed}")
    handlers = {"list": _cmd_list, "run": _cmd_run, "report": _cmd_report, "data": _cmd_data}
    return handlers[args.command](args, console)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
