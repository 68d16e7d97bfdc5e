"""Toolchain, pass list and the measured cost (need clang/opt/llc/valgrind of LLVM 14)."""

import subprocess

import pytest
from ecco_autotune import O3_PASSES, PASSES, Evaluator, Program, Toolchain, ToolchainError
from ecco_autotune import toolchain as tc


def test_missing_tool_error_names_the_install_command(monkeypatch):
    real = tc.shutil.which
    monkeypatch.setattr(tc.shutil, "which", lambda n: None if "valgrind" in n else real(n))
    tc._check.cache_clear()
    try:
        with pytest.raises(
            ToolchainError, match=r"valgrind.*apt-get install -y clang llvm valgrind"
        ):
            Toolchain.check()
    finally:
        tc._check.cache_clear()


def test_every_pass_exists_in_the_installed_llvm(evaluator):
    p = Program.builtin("md5", input_bytes=1024)
    bc, _ = evaluator.base(p)
    r = subprocess.run(
        [evaluator.toolchain.opt, "-enable-new-pm=0", *[f"-{x}" for x in PASSES], str(bc),
         "-o", "/dev/null"], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-500:]


@pytest.mark.slow
def test_every_pass_runs_alone(evaluator):
    p = Program.builtin("md5", input_bytes=1024)
    bc, _ = evaluator.base(p)
    for x in PASSES:
        r = subprocess.run([evaluator.toolchain.opt, "-enable-new-pm=0", f"-{x}", str(bc),
                            "-o", "/dev/null"], capture_output=True, timeout=60)  # fmt: skip
        assert r.returncode == 0, x


@pytest.mark.slow
def test_o3_pass_list_is_llvm14_legacy_o3(evaluator):
    """The GA seed is -O3's own transform list: the same optimised IR on md5."""
    p = Program.builtin("md5", input_bytes=1024)
    a = evaluator.evaluate(p, "-O3")
    b = evaluator.evaluate(p, O3_PASSES)
    assert a.valid and b.valid
    assert b.cycles == pytest.approx(a.cycles, rel=0.01)


def test_same_sequence_same_cycles(toolchain, tmp_path):
    p = Program.builtin("arc4", input_bytes=1024)
    seq = ("sroa", "instcombine", "loop-rotate", "licm", "simplifycfg")
    a = Evaluator(toolchain, workdir=tmp_path / "a").evaluate(p, seq)
    b = Evaluator(toolchain, workdir=tmp_path / "b").evaluate(p, seq)  # no shared cache
    assert a.valid and b.valid
    assert a.cycles == pytest.approx(b.cycles, rel=0, abs=0.5)  # callgrind is deterministic
    assert a.counters == b.counters


@pytest.mark.slow
def test_cycles_do_not_depend_on_the_work_folder_or_build_count(toolchain, tmp_path):
    """Regression: argv[0]'s length once shifted the stack and the simulated misses."""
    p = Program.builtin("ripemd160", input_bytes=1024)
    seq = ("sroa", "instcombine", "simplifycfg")
    a = Evaluator(toolchain, workdir=tmp_path / "a").evaluate(p, seq)
    far = Evaluator(toolchain, workdir=tmp_path / ("deeper-folder-name" * 4) / "b")
    far._counter = 123456
    b = far.evaluate(p, seq)
    assert a.valid and b.valid
    assert a.counters == b.counters


def test_wrong_output_is_rejected_by_the_checksum(toolchain, tmp_path):
    ev = Evaluator(toolchain, workdir=tmp_path)
    p = Program.builtin("arc4", input_bytes=1024)
    bc, _ = ev.base(p)
    ev._base[p.key()] = (bc, "0000000000000000 1024\n")  # a build whose output is "wrong"
    bad = ev.evaluate(p, ("sroa",))
    assert not bad.valid and bad.reason == "wrong output" and bad.cycles == float("inf")


def test_crashing_build_is_invalid(toolchain, tmp_path):
    """A program that is only correct at -O0 by luck (reads past a buffer) is caught."""
    drv = tmp_path / "d.c"
    drv.write_text(
        "#include <stdio.h>\n#include <stdint.h>\n#include <stdlib.h>\n"
        "__attribute__((noinline)) size_t ecco_kernel(const uint8_t *in, size_t n, uint8_t *out)"
        "{ size_t s = 0; for (size_t i = 0; i < n; i++) s += in[i] * (i | 1); out[0] = (uint8_t)s;"
        " return 1; }\n"
        "int main(int c, char **v){ uint8_t in[256], out[1]; for (int i = 0; i < 256; i++) "
        "in[i] = (uint8_t)(i * 7); ecco_kernel(in, 256, out); if (c > 1 && v[1][0] == 'x') "
        'abort(); printf("%d\\n", out[0]); return 0; }\n'
    )
    ev = Evaluator(toolchain, workdir=tmp_path / "w")
    ok = ev.evaluate(Program((), str(drv), name="tiny"), ("mem2reg", "instcombine"))
    assert ok.valid and ok.cycles > 0
    with pytest.raises(ValueError, match="-O0 build exits"):
        ev.evaluate(Program((), str(drv), args=("x",), name="aborts"), ("dce",))


@pytest.mark.parametrize("name", ["md5"])
def test_o3_needs_no_more_cycles_than_o0(evaluator, name):
    p = Program.builtin(name, input_bytes=1024)
    o0, o3 = evaluator.evaluate(p, "-O0"), evaluator.evaluate(p, "-O3")
    assert o0.valid and o3.valid
    assert o3.cycles <= o0.cycles
    assert o3.ir_instructions < o0.ir_instructions


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(__import__("ecco_autotune").BUILTIN))
def test_o3_needs_no_more_cycles_than_o0_everywhere(evaluator, name):
    p = Program.builtin(name, input_bytes=4096)
    o0, o3 = evaluator.evaluate(p, "-O0"), evaluator.evaluate(p, "-O3")
    assert o0.valid and o3.valid and o3.cycles <= o0.cycles


def test_evaluate_names_a_wrong_program(evaluator):
    with pytest.raises(TypeError, match=r"program must be an ecco_autotune\.Program"):
        evaluator.evaluate("md5", ["sroa"])
    with pytest.raises(TypeError, match="program must be"):
        evaluator.features("md5")


def test_features_count_the_ir(evaluator):
    f = evaluator.features(Program.builtin("md5", input_bytes=1024))
    assert f["loops"] >= 1 and f["loads"] > 0 and f["stores"] > 0 and f["calls"] > 0
    assert f["instructions"] >= f["loads"] + f["stores"] + f["calls"]
