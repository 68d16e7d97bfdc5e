"""Programs, their static features, and the measured cost of a pass sequence."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

from icml26_core.validation import check_float, check_int

from .passes import validate_passes
from .toolchain import Toolchain

#: Cost weights of the cycle estimate (our choice, a common callgrind cycle model).
WEIGHTS = {"Ir": 1, "branch_miss": 10, "l1_miss": 10, "ll_miss": 100}
KERNEL = "ecco_kernel"
_CFLAGS = ("-DHAVE_STDINT_H", "-DNO_CPYTHON_MODULE", "-DHAVE_POSIX_MEMALIGN", "-w")

#: Vendored programs: name -> (pycryptodome source, program group).
BUILTIN: dict[str, tuple[str, str]] = {
    "sha1": ("SHA1.c", "hashes"),
    "md2": ("MD2.c", "hashes"),
    "md4": ("MD4.c", "hashes"),
    "arc4": ("ARC4.c", "stream ciphers"),
    "sha256": ("SHA256.c", "hashes"),
    "md5": ("MD5.c", "hashes"),
    "ripemd160": ("RIPEMD160.c", "hashes"),
    "aes": ("AES.c", "block ciphers"),
    "cast": ("CAST.c", "block ciphers"),
    "chacha20": ("chacha20.c", "stream ciphers"),
}
#: The programs whose measured pass effects build the Chain-of-Thought dataset.
TRAIN_PROGRAMS = ("sha1", "md2", "md4", "arc4")
#: Held-out programs of the experiment (never read while building the dataset).
TEST_PROGRAMS = ("sha256", "md5", "ripemd160", "aes", "cast", "chacha20")


def data_dir() -> Path:
    """Folder of the vendored C sources (``pycryptodome/``) and drivers (``drivers/``)."""
    return Path(str(files("ecco_autotune") / "_data"))


@dataclass(frozen=True)
class Program:
    """A C program to tune: sources plus a driver whose ``ecco_kernel`` is measured.

    The driver defines ``main`` (fixed input, prints a checksum of the output) and
    ``size_t ecco_kernel(const uint8_t *in, size_t n, uint8_t *out)``; only cycles
    spent inside ``ecco_kernel`` (and what it calls) count.

    Attributes:
        sources: C files compiled as separate translation units and linked (LLVM IR).
        driver: The C file with ``main`` and ``ecco_kernel``.
        args: Command-line arguments of the run (the builtin drivers read the input
            size in bytes).
        include_dirs: ``-I`` folders.
        name: Label in tables.

    Raises:
        TypeError: If ``driver`` is not a path or ``sources``/``args``/``include_dirs``
            is not a tuple (or list).
        ValueError: If a source or the driver does not exist.
    """

    sources: tuple[str, ...]
    driver: str
    args: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()
    name: str = "program"

    def __post_init__(self) -> None:
        if not isinstance(self.driver, (str, os.PathLike)):
            raise TypeError(f"driver must be a path (str), got {type(self.driver).__name__}")
        object.__setattr__(self, "driver", os.fspath(self.driver))
        if isinstance(self.sources, (str, os.PathLike)):
            object.__setattr__(self, "sources", (self.sources,))
        for attr in ("sources", "args", "include_dirs"):
            if not isinstance(getattr(self, attr), (tuple, list)):
                got = type(getattr(self, attr)).__name__
                raise TypeError(f"{attr} must be a tuple of strings, got {got}")
        object.__setattr__(self, "sources", tuple(str(s) for s in self.sources))
        object.__setattr__(self, "args", tuple(str(a) for a in self.args))
        object.__setattr__(self, "include_dirs", tuple(str(d) for d in self.include_dirs))
        for s in self.sources:
            if not Path(s).is_file():
                raise ValueError(f"sources: file {s!r} does not exist")
        if not Path(self.driver).is_file():
            raise ValueError(f"driver: file {self.driver!r} does not exist")

    @classmethod
    def builtin(cls, name: str, *, input_bytes: int = 16384) -> Program:
        """One of the vendored pycryptodome programs (see :data:`BUILTIN`).

        Args:
            name: Key of :data:`BUILTIN`.
            input_bytes: Size of the fixed input, >= 1024 (multiple of 1024 used).

        Raises:
            ValueError: If ``name`` is unknown or ``input_bytes`` < 1024.
        """
        if name not in BUILTIN:
            raise ValueError(f"name must be one of {sorted(BUILTIN)}, got {name!r}")
        check_int("input_bytes", input_bytes, low=1024)
        d = data_dir()
        src, _ = BUILTIN[name]
        return cls(
            sources=(str(d / "pycryptodome" / src),),
            driver=str(d / "drivers" / f"{name}.c"),
            args=(str(input_bytes - input_bytes % 1024),),
            include_dirs=(str(d / "pycryptodome"), str(d / "drivers")),
            name=name,
        )

    def key(self) -> str:
        """Content hash of sources, driver and args (cache key)."""
        h = hashlib.sha256()
        for p in (*self.sources, self.driver):
            h.update(Path(p).read_bytes())
        h.update(repr((self.args, self.include_dirs)).encode())
        return h.hexdigest()[:16]


@dataclass(frozen=True)
class Evaluation:
    """The measured result of one pass sequence on one program.

    Attributes:
        cycles: Estimated cycles inside ``ecco_kernel`` (callgrind: Ir + 10 x branch
            mispredicts + 10 x L1 misses + 100 x LL misses); ``inf`` when invalid.
        ir_instructions: Instructions of the optimised LLVM IR module (0 when opt failed).
        valid: The build ran and printed the -O0 build's checksum.
        reason: Why it is invalid ("" when valid).
        counters: The raw callgrind event totals.
    """

    cycles: float
    ir_instructions: int
    valid: bool
    reason: str = ""
    counters: dict[str, int] = field(default_factory=dict)


def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


#: The measured program's whole environment: its size shifts the initial stack and so
#: the cache behaviour callgrind simulates.
_RUN_ENV = {"LC_ALL": "C"}


def _run_program(cmd: list[str], exe: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a built program (or valgrind on it) as ``./run.exe`` from a fresh folder.

    The folder is ``/tmp/ecco-run-XXXXXXXX`` (a fixed-length path), and argv[0] and the
    environment are fixed too, so the initial stack, and the cache misses callgrind
    simulates, do not depend on the work folder or on how many builds came before.
    Files the command writes (e.g. a callgrind output named relatively) are moved next
    to ``exe`` afterwards.
    """
    root = "/tmp" if os.path.isdir("/tmp") else None
    run_dir = Path(tempfile.mkdtemp(prefix="ecco-run-", dir=root))
    try:
        target = run_dir / "run.exe"
        shutil.copy2(exe, target)
        cmd = ["./run.exe" if c == str(exe) else c for c in cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                           cwd=run_dir, env=_RUN_ENV)  # fmt: skip
        for f in run_dir.iterdir():
            if f.name != "run.exe":
                shutil.move(str(f), exe.parent / f.name)
        return r
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _parse_callgrind(path: Path) -> dict[str, int]:
    events: list[str] = []
    totals: list[int] = []
    for line in path.read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith(("summary:", "totals:")):
            totals = [int(x) for x in line.split()[1:]]
    return dict(zip(events, totals, strict=False))


def cycle_estimate(c: dict[str, int]) -> float:
    """Cycles from callgrind counters (the weights of :data:`WEIGHTS`)."""
    g = c.get
    return float(
        g("Ir", 0)
        + WEIGHTS["branch_miss"] * (g("Bcm", 0) + g("Bim", 0))
        + WEIGHTS["l1_miss"] * (g("I1mr", 0) + g("D1mr", 0) + g("D1mw", 0))
        + WEIGHTS["ll_miss"] * (g("ILmr", 0) + g("DLmr", 0) + g("DLmw", 0))
    )


_OPCODE = re.compile(r"^\s+(?:%[\w.\-]+ = )?(?:tail |musttail |notail )?([a-z][a-z0-9_]*)\b")


def ir_features(ir_text: str) -> dict[str, int]:
    """InstCount-like static features of a textual LLVM IR module.

    Returns counts of instructions, functions, basic blocks, loads, stores, calls,
    branches, phis, allocas, arithmetic/logic/shift ops, compares, GEPs, switches and
    ``loops`` (natural loops are counted by :class:`Evaluator` with ``opt -loops``).
    """
    ops: Counter[str] = Counter()
    functions = blocks = 0
    in_fn = False
    for line in ir_text.splitlines():
        if line.startswith("define "):
            functions += 1
            blocks += 1
            in_fn = True
            continue
        if not in_fn:
            continue
        if line.startswith("}"):
            in_fn = False
            continue
        if (line and not line[0].isspace() and line.rstrip().endswith(":")) or re.match(
            r"^\d+:", line
        ):
            blocks += 1
            continue
        m = _OPCODE.match(line)
        if m:
            ops[m.group(1)] += 1
    arith = sum(ops[o] for o in ("add", "sub", "mul", "udiv", "sdiv", "urem", "srem"))
    logic = sum(ops[o] for o in ("and", "or", "xor", "shl", "lshr", "ashr"))
    return {
        "instructions": sum(ops.values()),
        "functions": functions,
        "blocks": blocks,
        "loads": ops["load"],
        "stores": ops["store"],
        "calls": ops["call"],
        "branches": ops["br"],
        "phis": ops["phi"],
        "allocas": ops["alloca"],
        "arith": arith,
        "logic": logic,
        "compares": ops["icmp"] + ops["fcmp"],
        "geps": ops["getelementptr"],
        "switches": ops["switch"],
        "selects": ops["select"],
        "vector_ops": ops["extractelement"] + ops["insertelement"] + ops["shufflevector"],
    }


def _check_program(program: Program) -> Program:
    if not isinstance(program, Program):
        raise TypeError(f"program must be an ecco_autotune.Program, got {type(program).__name__}")
    return program


class Evaluator:
    """Compiles, checks and measures pass sequences on programs, with two caches.

    A sequence seen before is answered from the cache, and so is a new sequence whose
    optimised IR is byte-identical to one already measured (callgrind is
    deterministic: identical totals on repeated runs).

    Args:
        toolchain: Tools to use (default: :meth:`Toolchain.check`).
        workdir: Folder for build files (default: a temporary folder).
        timeout: Seconds allowed for each tool run and for the program (> 0).

    Raises:
        TypeError: If ``toolchain`` is not a :class:`Toolchain`.
        ValueError: If ``timeout`` <= 0.
        ToolchainError: If ``toolchain`` is None and a tool is missing.
    """

    def __init__(
        self,
        toolchain: Toolchain | None = None,
        *,
        workdir: str | os.PathLike[str] | None = None,
        timeout: float = 60.0,
    ) -> None:
        if toolchain is not None and not isinstance(toolchain, Toolchain):
            raise TypeError(
                f"toolchain must be an ecco_autotune.Toolchain, got {type(toolchain).__name__}"
            )
        self.timeout = check_float("timeout", timeout, low=0.0, low_inclusive=False)
        self.toolchain = toolchain or Toolchain.check()
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="ecco-")
            workdir = self._tmp.name
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._base: dict[str, tuple[Path, str]] = {}
        self._by_seq: dict[tuple[str, tuple[str, ...]], Evaluation] = {}
        self._by_ir: dict[tuple[str, str], Evaluation] = {}
        self._features: dict[str, dict[str, int]] = {}
        self._counter = 0
        #: evaluations that ran llc and callgrind (cache misses)
        self.measured = 0

    # -- building -------------------------------------------------------------------
    def _compile_o0(self, program: Program, out: Path) -> None:
        t = self.toolchain
        flags = ["-O0", "-Xclang", "-disable-O0-optnone", "-emit-llvm", "-c", *_CFLAGS]
        flags += [f"-I{d}" for d in program.include_dirs]
        parts = []
        for i, src in enumerate((*program.sources, program.driver)):
            bc = out.with_name(f"{out.stem}.tu{i}.bc")
            r = _run([t.clang, *flags, src, "-o", str(bc)], self.timeout)
            if r.returncode != 0:
                raise ValueError(f"program {program.name!r}: clang failed on {src}:\n{r.stderr}")
            parts.append(str(bc))
        r = _run([t.llvm_link, *parts, "-o", str(out)], self.timeout)
        if r.returncode != 0:
            raise ValueError(f"program {program.name!r}: llvm-link failed:\n{r.stderr}")

    def _link_and_run(self, bc: Path, exe: Path, program: Program) -> tuple[bool, str]:
        t = self.toolchain
        obj = exe.with_suffix(".o")
        r = _run(
            [t.llc, "-O2", "-relocation-model=pic", "-filetype=obj", str(bc), "-o", str(obj)],
            self.timeout,
        )
        if r.returncode != 0:
            return False, "llc failed"
        r = _run([t.clang, str(obj), "-o", str(exe)], self.timeout)
        if r.returncode != 0:
            return False, "link failed"
        return True, ""

    def base(self, program: Program) -> tuple[Path, str]:
        """The -O0 IR module of ``program`` and its reference output (built once)."""
        key = _check_program(program).key()
        with self._build_lock:  # one build per program, even with concurrent callers
            with self._lock:
                if key in self._base:
                    return self._base[key]
            return self._build_base(program, key)

    def _build_base(self, program: Program, key: str) -> tuple[Path, str]:
        d = self.workdir / key
        d.mkdir(exist_ok=True)
        bc = d / "base.bc"
        self._compile_o0(program, bc)
        ok, why = self._link_and_run(bc, d / "base.exe", program)
        if not ok:
            raise ValueError(f"program {program.name!r}: the -O0 build fails ({why})")
        try:
            exe = d / "base.exe"
            r = _run_program([str(exe), *program.args], exe, self.timeout)
        except subprocess.TimeoutExpired as e:
            raise ValueError(f"program {program.name!r}: the -O0 build times out") from e
        if r.returncode != 0 or not r.stdout.strip():
            raise ValueError(f"program {program.name!r}: the -O0 build exits {r.returncode}")
        with self._lock:
            self._base[key] = (bc, r.stdout)
        return bc, r.stdout

    def features(self, program: Program) -> dict[str, int]:
        """Static features of the -O0 IR (see :func:`ir_features`) plus ``loops``."""
        key = _check_program(program).key()
        if key not in self._features:
            bc, _ = self.base(program)
            t = self.toolchain
            text = _run([t.llvm_dis, str(bc), "-o", "-"], self.timeout).stdout
            feats = ir_features(text)
            loops = _run([t.opt, "-enable-new-pm=0", "-analyze", "-loops", str(bc)], self.timeout)
            feats["loops"] = (loops.stdout + loops.stderr).count("Loop at depth")
            self._features[key] = feats
        return dict(self._features[key])

    # -- measuring ------------------------------------------------------------------
    def evaluate(self, program: Program, passes: tuple[str, ...] | list[str] | str) -> Evaluation:
        """Measure ``passes`` (a sequence, or ``"-O0"``/``"-O1"``/``"-O2"``/``"-O3"``).

        Raises:
            TypeError: If ``program`` is not a :class:`Program` or ``passes`` is not a
                sequence of strings.
            ValueError: On an empty sequence or an unknown pass name.
        """
        if isinstance(passes, str) and passes in ("-O0", "-O1", "-O2", "-O3"):
            seq: tuple[str, ...] = (passes,)
        else:
            seq = validate_passes(passes)
        key = _check_program(program).key()
        with self._lock:
            hit = self._by_seq.get((key, seq))
            self._counter += 1
            n = self._counter
        if hit is not None:
            return hit
        bc, reference = self.base(program)
        d = self.workdir / key
        t = self.toolchain
        out_bc = d / f"e{n:08d}.bc"
        try:
            if seq == ("-O0",):
                out_bc = bc
            else:
                flags = [seq[0]] if seq[0].startswith("-O") else [f"-{p}" for p in seq]
                r = _run([t.opt, "-enable-new-pm=0", *flags, str(bc), "-o", str(out_bc)],
                         self.timeout)  # fmt: skip
                if r.returncode != 0:
                    return self._store(
                        key, seq, None, Evaluation(float("inf"), 0, False, "opt failed")
                    )
            ir_hash = hashlib.sha256(out_bc.read_bytes()).hexdigest()
            with self._lock:
                same = self._by_ir.get((key, ir_hash))
            if same is not None:
                return self._store(key, seq, None, same)
            ev = self._measure(program, out_bc, d / f"e{n:08d}.exe", reference)
            return self._store(key, seq, ir_hash, ev)
        except subprocess.TimeoutExpired:
            return self._store(key, seq, None, Evaluation(float("inf"), 0, False, "timeout"))
        finally:
            for suffix in (".exe", ".o", ".cg"):
                (d / f"e{n:08d}{suffix}").unlink(missing_ok=True)
            if out_bc != bc:
                out_bc.unlink(missing_ok=True)

    def _store(
        self, key: str, seq: tuple[str, ...], ir_hash: str | None, ev: Evaluation
    ) -> Evaluation:
        with self._lock:
            self._by_seq[(key, seq)] = ev
            if ir_hash is not None:
                self._by_ir[(key, ir_hash)] = ev
        return ev

    def _measure(self, program: Program, bc: Path, exe: Path, reference: str) -> Evaluation:
        t = self.toolchain
        text = _run([t.llvm_dis, str(bc), "-o", "-"], self.timeout).stdout
        n_ir = ir_features(text)["instructions"]
        ok, why = self._link_and_run(bc, exe, program)
        if not ok:
            return Evaluation(float("inf"), n_ir, False, why)
        r = _run_program([str(exe), *program.args], exe, self.timeout)
        if r.returncode != 0:
            return Evaluation(float("inf"), n_ir, False, f"crashed (exit {r.returncode})")
        if r.stdout != reference:
            return Evaluation(float("inf"), n_ir, False, "wrong output")
        cg = exe.with_suffix(".cg")
        r = _run_program(
            [t.valgrind, "--tool=callgrind", "--cache-sim=yes", "--branch-sim=yes",
             f"--toggle-collect={KERNEL}", f"--callgrind-out-file={cg.name}", str(exe),
             *program.args],
            exe,
            self.timeout,
        )  # fmt: skip
        if r.returncode != 0 or not cg.exists():
            return Evaluation(float("inf"), n_ir, False, "callgrind failed")
        counters = _parse_callgrind(cg)
        with self._lock:
            self.measured += 1
        if counters.get("Ir", 0) <= 0:
            return Evaluation(float("inf"), n_ir, False, f"{KERNEL} not found")
        return Evaluation(cycle_estimate(counters), n_ir, True, "", counters)


_DEFAULT: Evaluator | None = None


def default_evaluator() -> Evaluator:
    """The process-wide :class:`Evaluator` that :func:`evaluate` and the tuners share."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Evaluator()
    return _DEFAULT


def evaluate(program: Program, passes: tuple[str, ...] | list[str] | str) -> Evaluation:
    """Measure a pass sequence on a program with a shared :class:`Evaluator`.

    Args:
        program: The program.
        passes: LLVM 14 pass names (see :data:`~ecco_autotune.PASSES`), or one of
            ``"-O0"``, ``"-O1"``, ``"-O2"``, ``"-O3"``.

    Returns:
        The :class:`Evaluation` (cycles, IR instruction count, validity).

    Raises:
        ToolchainError: If clang, opt, llc, llvm-link, llvm-dis or valgrind is missing.
        TypeError: If ``program`` is not a :class:`Program` or ``passes`` is not a
            sequence of strings.
        ValueError: On an empty sequence or an unknown pass name.
    """
    return default_evaluator().evaluate(program, passes)
