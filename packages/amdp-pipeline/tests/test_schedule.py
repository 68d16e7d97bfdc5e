"""Schedule invariants (hypothesis-generated S, K, m), the GPipe makespan, bad input."""

import itertools
import math

import pytest
from amdp_pipeline import METHODS, default_n_pipelines, make_schedule, placement, simulate
from hypothesis import given, settings
from hypothesis import strategies as st


def _check_invariants(sched):
    s = sched.n_stages
    f_end, b_start, b_end, f_start = {}, {}, {}, {}
    for a in sched.actions:
        if a.kind == "F":
            f_start[(a.minibatch, a.stage)], f_end[(a.minibatch, a.stage)] = a.start, a.end
        elif a.kind == "B":
            b_start[(a.minibatch, a.stage)], b_end[(a.minibatch, a.stage)] = a.start, a.end
    n = sched.n_minibatches
    assert len(f_end) == len(b_end) == n * s
    for i in range(n):
        for j in range(s):
            assert f_end[(i, j)] <= b_start[(i, j)] + 1e-12  # F precedes its B
            if j + 1 < s:
                assert f_end[(i, j)] <= f_start[(i, j + 1)] + 1e-12
                assert b_end[(i, j + 1)] <= b_start[(i, j)] + 1e-12
    for acts in sched.workers:  # one action at a time per worker
        for x, y in itertools.pairwise(acts):
            assert x.end <= y.start + 1e-12
    for a in sched.actions:  # each stage runs on its pipeline's worker for that stage
        if a.kind != "U":
            assert a.worker == sched.placement[a.pipeline][a.stage]
            assert a.pipeline == sched.pipeline_of(a.minibatch)
    if sched.max_inflight is not None:  # stage-0 in-flight limit per pipeline
        for k in range(sched.n_pipelines):
            ev = []
            for i in range(n):
                if sched.pipeline_of(i) == k:
                    ev += [(f_start[(i, 0)], 1), (b_end[(i, 0)], -1)]
            cur = 0
            for _, d in sorted(ev, key=lambda e: (e[0], e[1])):
                cur += d
                assert cur <= sched.max_inflight


@settings(max_examples=20, deadline=None)
@given(
    s=st.integers(1, 8),
    k_mult=st.integers(1, 3),
    steps=st.integers(1, 4),
    method=st.sampled_from(METHODS),
)
def test_invariants(s, k_mult, steps, method):
    k = default_n_pipelines(s) if method == "amdp" else 1
    m = k * k_mult
    sched = make_schedule(s, k, m, method=method, n_steps=steps)
    _check_invariants(sched)
    r = simulate(sched)
    assert r.replicas_consistent
    assert 0.0 <= r.bubble_fraction < 1.0
    if method in ("amdp", "2bw"):
        assert r.max_gap <= 1  # at most one update between F and B
    if method in ("gpipe", "1f1b"):
        assert r.max_gap == 0
    if method == "amdp":
        assert max(r.peak_activations) <= 2 * k  # 2 in flight per pipeline, k stages/worker
        assert r.max_mismatched_per_step <= min(m, 2 * k)
        assert r.recomputed == sum(g > 0 for row in r.gap for g in row)
    if method == "pipedream":
        assert r.max_gap <= s - 1


@pytest.mark.parametrize("method", ["gpipe", "1f1b"])
@pytest.mark.parametrize(("s", "m"), [(1, 1), (2, 3), (4, 4), (4, 8), (8, 5)])
def test_sync_makespan(method, s, m):
    f, b = 1.0, 2.0
    r = simulate(make_schedule(s, 1, m, {"F": f, "B": b}, method=method, n_steps=1))
    assert math.isclose(r.makespan, (m + s - 1) * (f + b))
    assert math.isclose(r.bubble_fraction, (s - 1) / (m + s - 1))


def test_amdp_more_steps_overlap_and_bound_versions():
    r = simulate(make_schedule(8, None, 8, method="amdp", n_steps=6))
    one = simulate(make_schedule(8, 1, 8, method="1f1b", n_steps=6))
    assert r.max_gap == 1
    assert r.steady_throughput > one.steady_throughput
    assert max(r.peak_activations) <= max(one.peak_activations)


def test_stash_removes_recomputation():
    r = simulate(make_schedule(4, None, 4, method="amdp", n_steps=4, stash=True))
    assert r.recomputed == 0 and r.max_gap == 1


def test_placement_is_bidirectional_and_covers_workers():
    p = placement(4, 2)
    assert p[0] == [0, 1, 2, 3]
    assert sorted(p[1]) == [0, 1, 2, 3]
    assert p[1][0] == (p[1][1] + 1) % 4  # reverse direction
    assert default_n_pipelines(8) == 4 and default_n_pipelines(3) == 2


def test_per_stage_costs():
    r = simulate(make_schedule(2, 1, 1, {"F": [1, 3], "B": [2, 6]}, method="gpipe", n_steps=1))
    assert math.isclose(r.makespan, 1 + 3 + 6 + 2)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"n_stages": 4, "n_pipelines": 0}, ValueError, "n_pipelines"),
        ({"n_stages": 4, "n_pipelines": 2, "minibatches_per_step": 3}, ValueError, "divisible"),
        ({"n_stages": 0}, ValueError, "n_stages"),
        ({"n_stages": 4, "method": "zb"}, ValueError, "method"),
        ({"n_stages": 4, "n_pipelines": 2, "method": "1f1b"}, ValueError, "n_pipelines"),
        ({"n_stages": 2, "cost": {"F": 1}}, ValueError, "cost"),
        ({"n_stages": 2, "cost": {"F": [1, 2, 3], "B": 1}}, ValueError, "cost"),
        ({"n_stages": 2, "cost": {"F": -1, "B": 1}}, ValueError, "cost"),
        ({"n_stages": 2.0}, TypeError, "n_stages"),
        # used to fail inside dict() with "'int' object is not iterable"
        ({"n_stages": 2, "cost": 5}, TypeError, "cost must be a mapping"),
        ({"n_stages": 2, "cost": [1, 2]}, TypeError, "cost must be a mapping"),
        # a string used to be read as a sequence of per-stage costs
        ({"n_stages": 2, "cost": {"F": "ab", "B": 1}}, TypeError, r"cost\['F'\]"),
    ],
)
def test_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make_schedule(**kwargs)


def test_simulate_type_error():
    with pytest.raises(TypeError, match="schedule"):
        simulate("gpipe")
