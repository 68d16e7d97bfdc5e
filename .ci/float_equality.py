#!/usr/bin/env python3
"""Flag exact float equality in tests: results that differ in the last bit across CPUs.

A test that compares computed floats with ``==`` passes on one machine and fails on
another (BLAS kernels, FMA, summation order). This walks the test files and reports
every ``==`` / ``!=`` inside an ``assert`` where one side is a float literal or
arithmetic (``+ - * / ** @``), unless the other side is ``pytest.approx(...)``. Compare
with ``pytest.approx``, ``np.testing.assert_allclose`` or ``torch.testing.assert_close``
instead. Where exact equality is the point (a value that must be bit-identical, e.g. a
result that is copied, or an exact zero by construction), end the line with
``# exact: <why>``.

Usage: ``python .ci/float_equality.py [ROOT]``; exits 1 and lists the places if any.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SKIP_PARTS = {".venv", "node_modules", "results", "build", "dist", ".git"}


def _is_approx(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute | ast.Name)
        and getattr(node.func, "attr", getattr(node.func, "id", "")) == "approx"
    )


def _floaty(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, float):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return isinstance(node.operand.value, float)
    if isinstance(node, ast.BinOp):
        return not (isinstance(node.op, ast.Mod) or _int_only(node) or _not_numeric(node))
    return False


def _not_numeric(node: ast.AST) -> bool:
    """A BinOp with a string, list or tuple in it is a path join or a repetition."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str | bytes):
            return True
        if isinstance(sub, ast.List | ast.Tuple | ast.JoinedStr):
            return True
    return False


def _int_only(node: ast.AST) -> bool:
    """Arithmetic of integer literals and names only counts as exact (shapes, counts)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Div | ast.Pow | ast.MatMult):
            return False
        return _int_only(node.left) and _int_only(node.right)
    if isinstance(node, ast.Name | ast.Attribute | ast.Subscript):
        return True  # e.g. n * d, x.shape[0] + 1: integer bookkeeping, not float results
    if isinstance(node, ast.Call):
        f = node.func
        name = getattr(f, "id", getattr(f, "attr", ""))
        return name in {"len", "int", "sum", "numel", "count", "size"}
    return False


def check_file(path: Path) -> list[str]:
    """Return ``path:line: message`` for each exact float comparison in ``path``."""
    src = path.read_text(encoding="utf-8", errors="replace")
    try:
        tree = ast.parse(src, filename=str(path))
    except SyntaxError as exc:
        return [f"{path}:{exc.lineno}: cannot parse: {exc.msg}"]
    lines = src.splitlines()
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        for cmp in ast.walk(node.test):
            if not isinstance(cmp, ast.Compare):
                continue
            operands = [cmp.left, *cmp.comparators]
            for op, left, right in zip(cmp.ops, operands, operands[1:], strict=False):
                if not isinstance(op, ast.Eq | ast.NotEq):
                    continue
                if _is_approx(left) or _is_approx(right):
                    continue
                if _floaty(left) or _floaty(right):
                    line = lines[cmp.lineno - 1] if cmp.lineno <= len(lines) else ""
                    if "# exact:" in line:
                        continue
                    out.append(
                        f"{path}:{cmp.lineno}: exact float comparison "
                        f"`{ast.unparse(cmp)}`; use pytest.approx or a tolerance "
                        "(or '# exact: <why>')"
                    )
    return out


def test_files(root: Path) -> list[Path]:
    """Every ``test_*.py`` under ``root``, outside virtual environments and outputs."""
    return sorted(p for p in root.rglob("test_*.py") if not SKIP_PARTS & set(p.parts))


def main(argv: list[str]) -> int:
    """Check the tests under ``argv[0]`` (default: the repository root)."""
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    problems = [msg for f in test_files(root) for msg in check_file(f)]
    for msg in problems:
        print(msg)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
