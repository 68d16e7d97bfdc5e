"""The search space: LLVM 14 legacy-pass-manager transform passes, grouped by intent.

The list is CompilerGym's LLVM action space curated for LLVM 14: ``constprop``,
``functionattrs`` and ``rpo-functionattrs`` do not exist there (``function-attrs`` and
``rpo-function-attrs`` do), and passes that only instrument, strip debug information,
rename values or lower intrinsics our C programs never contain are left out (the
search cannot gain from them). Every name runs alone under
``opt -enable-new-pm=0 -NAME`` with LLVM 14.0.6 (tested).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

#: Transform passes of the search space, in a fixed order (indices are stable).
PASSES: tuple[str, ...] = (
    "adce", "aggressive-instcombine", "alignment-from-assumptions", "always-inline",
    "argpromotion", "attributor", "bdce", "break-crit-edges", "callsite-splitting",
    "called-value-propagation", "consthoist", "constmerge", "correlated-propagation",
    "dce", "deadargelim", "div-rem-pairs", "dse", "early-cse", "early-cse-memssa",
    "elim-avail-extern", "flattencfg", "float2int", "forceattrs", "function-attrs",
    "globaldce", "globalopt", "globalsplit", "gvn", "gvn-hoist", "hotcoldsplit",
    "indvars", "infer-address-spaces", "inferattrs", "inline", "instcombine",
    "instsimplify", "ipsccp", "irce", "jump-threading", "lcssa", "libcalls-shrinkwrap",
    "licm", "load-store-vectorizer", "loop-data-prefetch", "loop-deletion",
    "loop-distribute", "loop-fusion", "loop-idiom", "loop-instsimplify",
    "loop-interchange", "loop-load-elim", "loop-reduce", "loop-reroll", "loop-rotate",
    "loop-simplify", "loop-simplifycfg", "loop-sink", "loop-unroll",
    "loop-unroll-and-jam", "loop-unswitch", "loop-vectorize", "loop-versioning",
    "loop-versioning-licm", "lower-constant-intrinsics", "lower-expect", "lowerinvoke",
    "lowerswitch", "mem2reg", "memcpyopt", "mergefunc", "mergeicmps", "mergereturn",
    "mldst-motion", "nary-reassociate", "newgvn", "partial-inliner",
    "partially-inline-libcalls", "prune-eh", "reassociate", "reg2mem",
    "rpo-function-attrs", "scalarizer", "sccp", "separate-const-offset-from-gep",
    "simple-loop-unswitch", "simplifycfg", "sink", "slp-vectorizer", "slsr",
    "speculative-execution", "sroa", "strip-dead-prototypes", "tailcallelim",
    "vector-combine",
)  # fmt: skip

_PASS_SET = frozenset(PASSES)

#: The strategist's fixed intent vocabulary and the passes each intent favours.
INTENTS: dict[str, tuple[str, ...]] = {
    "loop": (
        "loop-rotate", "licm", "indvars", "loop-unroll", "loop-simplify", "lcssa",
        "loop-idiom", "loop-deletion", "loop-unswitch", "simple-loop-unswitch",
        "loop-reduce", "loop-instsimplify", "loop-simplifycfg", "loop-unroll-and-jam",
        "loop-sink", "irce", "loop-fusion", "loop-interchange",
    ),
    "memory": (
        "sroa", "mem2reg", "gvn", "newgvn", "dse", "memcpyopt", "mldst-motion",
        "early-cse-memssa", "loop-load-elim", "licm", "load-store-vectorizer",
        "alignment-from-assumptions",
    ),
    "inlining": (
        "inline", "always-inline", "partial-inliner", "argpromotion", "deadargelim",
        "ipsccp", "globalopt", "globaldce", "function-attrs", "rpo-function-attrs",
        "called-value-propagation", "prune-eh", "mergefunc", "inferattrs",
    ),
    "control flow": (
        "simplifycfg", "jump-threading", "correlated-propagation", "tailcallelim",
        "speculative-execution", "callsite-splitting", "flattencfg", "mergereturn",
        "adce", "sink", "hotcoldsplit", "lowerswitch",
    ),
    "scalar": (
        "instcombine", "aggressive-instcombine", "reassociate", "nary-reassociate",
        "sccp", "early-cse", "bdce", "dce", "instsimplify", "consthoist", "slsr",
        "div-rem-pairs", "float2int", "separate-const-offset-from-gep",
    ),
    "vectorization": (
        "loop-vectorize", "slp-vectorizer", "vector-combine", "load-store-vectorizer",
        "loop-distribute", "loop-versioning", "scalarizer", "instcombine",
    ),
}  # fmt: skip

#: A short recipe per intent (what the strategist-only baseline appends to -O3).
RECIPES: dict[str, tuple[str, ...]] = {
    "loop": ("loop-rotate", "licm", "indvars", "loop-unroll", "instcombine", "simplifycfg"),
    "memory": ("sroa", "early-cse-memssa", "gvn", "dse", "memcpyopt", "instcombine"),
    "inlining": ("inline", "argpromotion", "ipsccp", "globalopt", "instcombine", "simplifycfg"),
    "control flow": ("jump-threading", "correlated-propagation", "simplifycfg", "adce"),
    "scalar": ("instcombine", "reassociate", "early-cse", "sccp", "bdce", "instcombine"),
    "vectorization": ("loop-vectorize", "slp-vectorizer", "vector-combine", "instcombine"),
}

#: The transform passes of LLVM 14's legacy ``opt -O3`` pipeline, in order (from
#: ``opt -enable-new-pm=0 -O3 -debug-pass=Arguments``, analyses dropped). It is the
#: genetic algorithm's seed; ``-O3`` itself is measured as ``opt -O3``.
O3_PASSES: tuple[str, ...] = (
    "lower-expect", "simplifycfg", "sroa", "early-cse", "forceattrs", "inferattrs",
    "callsite-splitting", "ipsccp", "called-value-propagation", "globalopt", "mem2reg",
    "deadargelim", "instcombine", "simplifycfg", "prune-eh", "inline", "function-attrs",
    "argpromotion", "sroa", "early-cse-memssa", "speculative-execution", "jump-threading",
    "correlated-propagation", "simplifycfg", "aggressive-instcombine", "instcombine",
    "libcalls-shrinkwrap", "tailcallelim", "simplifycfg", "reassociate", "loop-simplify",
    "lcssa", "licm", "loop-rotate", "licm", "loop-unswitch", "simplifycfg", "instcombine",
    "loop-simplify", "lcssa", "loop-idiom", "indvars", "loop-deletion", "loop-unroll",
    "sroa", "mldst-motion", "gvn", "sccp", "bdce", "instcombine", "jump-threading",
    "correlated-propagation", "adce", "memcpyopt", "dse", "loop-simplify", "lcssa", "licm",
    "simplifycfg", "instcombine", "elim-avail-extern", "rpo-function-attrs", "globalopt",
    "globaldce", "float2int", "lower-constant-intrinsics", "loop-simplify", "lcssa",
    "loop-rotate", "loop-distribute", "loop-vectorize", "loop-simplify", "loop-load-elim",
    "instcombine", "simplifycfg", "slp-vectorizer", "vector-combine", "instcombine",
    "loop-simplify", "lcssa", "loop-unroll", "instcombine", "loop-simplify", "lcssa",
    "licm", "alignment-from-assumptions", "strip-dead-prototypes", "globaldce",
    "constmerge", "loop-simplify", "lcssa", "loop-sink", "instsimplify", "div-rem-pairs",
    "simplifycfg",
)  # fmt: skip


def validate_passes(passes: Iterable[str], *, name: str = "passes") -> tuple[str, ...]:
    """Check a pass sequence and return it as a tuple.

    Args:
        passes: Pass names without the leading dash, each one of :data:`PASSES`.
        name: Argument name for the error message.

    Raises:
        TypeError: If ``passes`` is a string or holds a non-string.
        ValueError: If it is empty or names an unknown pass.
    """
    if isinstance(passes, str):
        raise TypeError(f"{name} must be a sequence of pass names, got the string {passes!r}")
    if not isinstance(passes, Iterable):
        raise TypeError(f"{name} must be a sequence of pass names, got {type(passes).__name__}")
    seq = tuple(passes)
    if not seq:
        raise ValueError(f"{name} must hold at least one pass, got an empty sequence")
    for p in seq:
        if not isinstance(p, str):
            raise TypeError(f"{name} must hold pass names (str), got {p!r}")
        if p not in _PASS_SET:
            raise ValueError(
                f"{name}: unknown pass {p!r}; expected one of ecco_autotune.PASSES "
                "(LLVM 14 legacy pass names without the leading dash)"
            )
    return seq


def intent_weights(intent: str | None, *, focus: float = 0.7) -> list[float]:
    """Mutation distribution over :data:`PASSES` for an intent.

    ``focus`` of the mass goes uniformly to the intent's passes, the rest uniformly to
    all passes; None (no or unparseable intent) gives the uniform distribution.

    Raises:
        ValueError: If ``intent`` is not a key of :data:`INTENTS` or None.
    """
    n = len(PASSES)
    if intent is None:
        return [1.0 / n] * n
    if intent not in INTENTS:
        raise ValueError(f"intent must be one of {sorted(INTENTS)} or None, got {intent!r}")
    favoured = set(INTENTS[intent])
    k = len(favoured)
    return [(1 - focus) / n + (focus / k if p in favoured else 0.0) for p in PASSES]


def remove_intent(passes: Sequence[str], intent: str) -> tuple[str, ...]:
    """``passes`` without the passes of ``intent`` (the ablation of the CoT dataset)."""
    drop = set(INTENTS[intent])
    kept = tuple(p for p in passes if p not in drop)
    return kept or ("dce",)
