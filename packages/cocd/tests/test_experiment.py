import numpy as np
import pytest
from cocd import experiment
from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("cocd", tmp_path)
    assert len(result.claims) == 5
    names = {row["method"] for row in result.tables[0].rows}
    assert {"CoCD", "BCCD", "SPSA (k directions)", "floor: no step (initial loss)"} <= names
    assert result.claims[2].holds  # queries per step are k + 1 at both sizes


def test_batched_mlp_matches_the_module():
    import torch
    import torch.nn.functional as F

    model = experiment._mlp(64, 0, torch.float64)
    xb = torch.rand(16, 64, dtype=torch.float64)
    yb = torch.randint(0, 10, (16,))
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    X = torch.stack([flat, flat + 0.01])
    f = experiment._batched_mlp(64, xb, yb)(X)
    with torch.no_grad():
        assert float(f[0]) == pytest.approx(float(F.cross_entropy(model(xb), yb)), abs=1e-12)
        for p in model.parameters():
            p.add_(0.01)
        assert float(f[1]) == pytest.approx(float(F.cross_entropy(model(xb), yb)), abs=1e-12)


def test_train_counts_equal_queries():
    data = experiment._data()
    assert len(data["ytr"]) + len(data["yte"]) == 1797
    assert np.bincount(data["yte"]).min() >= 30
    r = experiment._train("BCCD", 1.0, 0, data, queries=33 * 4, batch=16)
    assert r["queries"] == 33 * 4 and r["steps"] == 4
    assert r["final"] < r["init"] + 0.5


def _flat(net):
    return __import__("torch").cat([p.detach().reshape(-1) for p in net.parameters()])


def _module_losses(net, X, xb, yb):
    """The module's own loss at each flat parameter row of X (reference)."""
    import torch
    import torch.nn.functional as F
    from torch.func import functional_call

    names = [n for n, _ in net.named_parameters()]
    shapes = [p.shape for p in net.parameters()]
    out = []
    for row in X:
        pieces = torch.split(row, [s.numel() for s in shapes])
        p = {n: t.view(s) for n, t, s in zip(names, pieces, shapes, strict=True)}
        with torch.no_grad():
            out.append(float(F.cross_entropy(functional_call(net, p, (xb,)), yb)))
    return np.array(out)


def test_batched_cnn_matches_the_module_for_coordinate_and_dense_rows():
    import torch

    torch.manual_seed(0)
    net = experiment._cnn(0, torch.float64)
    assert sum(p.numel() for p in net.parameters()) == 19754
    xb, yb = torch.rand(8, 784, dtype=torch.float64), torch.randint(0, 10, (8,))
    x = _flat(net)
    f = experiment._batched_cnn(xb, yb)
    # coordinate probes in the linear layers only (features reused) ...
    Xfc = x.repeat(4, 1)
    for r, i in enumerate((500, 9000, 19000), start=1):
        Xfc[r, i] += 0.1
    # ... and rows that also move the convolutions (grouped convolution path)
    Xmix = x.repeat(4, 1)
    Xmix[1, 3] += 0.1
    Xmix[2] += 0.01 * torch.randn(x.numel(), dtype=torch.float64)
    Xmix[3, 10000] -= 0.1
    for X in (Xfc, Xmix):
        np.testing.assert_allclose(f(X).numpy(), _module_losses(net, X, xb, yb), atol=1e-12)


def test_mnist_mlp_and_counts_per_step():
    import torch

    net = experiment._build("mlp-mnist", 0, torch.float64)
    xb, yb = torch.rand(8, 784, dtype=torch.float64), torch.randint(0, 10, (8,))
    x = _flat(net)
    X = torch.stack([x, x + 0.01 * torch.randn(x.numel(), dtype=torch.float64)])
    f = experiment._batched("mlp-mnist", net, xb, yb)
    np.testing.assert_allclose(f(X).numpy(), _module_losses(net, X, xb, yb), atol=1e-12)
    c = experiment._count_queries("cnn-mnist", steps=2)
    assert c["d"] == 19754 and c["per_step"] == [33, 33]


def test_full_scale_config_has_the_issue_sizes():
    cfg = experiment.SCALES["full"]
    assert 59_000 < cfg["digits_queries"] <= 60_000
    assert 149_000 < cfg["mnist_queries"] <= 150_000
    assert cfg["batch"] == 256
    assert set(cfg["mnist"]) == {"mlp-mnist", "cnn-mnist", "resnet-mnist"}
    assert all(set(m) == set(experiment.METHODS) for m in cfg["mnist"].values())
    assert 260_000 < experiment._dim("resnet-mnist") < 280_000  # the abstract's ~270k
    default = experiment.SCALES["default"]
    assert {"mlp-mnist", "cnn-mnist"} <= set(default["mnist"])
    # the issue's method list on every MNIST model, the same 5-point grid size everywhere
    assert all(set(m) == set(experiment.MNIST_METHODS) for m in default["mnist"].values())
    assert default["mnist_grid"] == default["n_grid"] == 5


def test_full_scale_resnet_path_runs_at_tiny_size():
    """The full scale's ResNet code path (_train -> _batched -> vmap chunks), tiny."""
    import torch

    rng = np.random.default_rng(0)
    data = {
        "Xtr": rng.random((16, 784), dtype=np.float32),
        "ytr": rng.integers(0, 10, 16),
        "Xte": rng.random((8, 784), dtype=np.float32),
        "yte": rng.integers(0, 10, 8),
    }
    for name in ("CoCD", "SPSA (k directions)"):
        r = experiment._train(
            name, 1e-3, 0, data, queries=33 * 2, batch=4, model="resnet-mnist", width=2
        )
        assert r["queries"] == 66 and np.isfinite(r["final"])
    net = experiment._resnet(0, torch.float64, width=2)
    xb, yb = torch.rand(4, 784, dtype=torch.float64), torch.randint(0, 10, (4,))
    x = _flat(net)
    X = torch.stack([x + 0.01 * i * torch.ones_like(x) for i in range(10)])  # > one chunk of 8
    f = experiment._batched("resnet-mnist", net, xb, yb)
    np.testing.assert_allclose(f(X).numpy(), _module_losses(net, X, xb, yb), atol=1e-12)


@pytest.mark.slow
def test_finite_differences_equal_zeroth_learn():
    """Cross-check against zeroth-learn 0.2.6's PartialFiniteDifference (same points).

    Slow: importing zeroth-learn imports matplotlib.pyplot and pandas (most of the
    test's time); the default run makes the same cross-check (its table).
    """
    xc = experiment._crosscheck_zeroth_learn(blocks=2)
    assert xc["n"] == 64
    assert xc["max_abs_diff"] < 1e-12 * max(1.0, xc["max_abs_estimate"]) + 1e-13
    assert xc["max_abs_estimate"] > 1e-4  # not a comparison of zeros


@pytest.mark.parametrize("model", ["mlp-digits", "mlp-mnist", "cnn-mnist"])
def test_probe_coordinates_match_the_module(model):
    """The rank-one coordinate probes give the module's losses at x and each x + h e_i."""
    import torch

    net = experiment._build(model, 0, torch.float64)
    d_in = 64 if model == "mlp-digits" else 784
    xb, yb = torch.rand(8, d_in, dtype=torch.float64), torch.randint(0, 10, (8,))
    x = _flat(net)
    d = x.numel()
    f = experiment._batched(model, net, xb, yb)
    # every layer: first weights, first biases, second weights and biases; for the CNN
    # also a block with a convolution weight (the dense fallback)
    blocks = [[500, d - 400, d - 330, d - 320, d - 15, d - 1], [d - 340, d - 2]]
    if model == "cnn-mnist":
        blocks.append([3, 399, 1000])
    for block in blocks:
        idx = torch.tensor(block)
        X = x.repeat(len(block) + 1, 1)
        X[torch.arange(1, len(block) + 1), idx] += 0.1
        np.testing.assert_allclose(
            f.probe_coordinates(x, idx, 0.1).numpy(), _module_losses(net, X, xb, yb), atol=1e-12
        )


def test_optimizers_use_probe_coordinates_with_the_same_result():
    """CoCD with the fast probes follows the dense-rows path (float64) and counts k + 1."""
    import cocd
    import torch

    xb, yb = torch.rand(16, 64, dtype=torch.float64), torch.randint(0, 10, (16,))
    paths = []
    for fast in (True, False):
        net = experiment._mlp(64, 0, torch.float64)
        f = experiment._batched_mlp(64, xb, yb)
        g = f if fast else (lambda X, f=f: f(X))  # a plain function has no probe_coordinates
        opt = cocd.CoCD(net.parameters(), lr=0.05, block_size=32, fd_step=1e-3)
        for _ in range(5):
            opt.step(batched_closure=g)
        assert opt.queries == 5 * 33
        paths.append(_flat(net))
    np.testing.assert_allclose(paths[0].numpy(), paths[1].numpy(), atol=1e-9)


def test_keep_freed_memory_is_a_safe_no_op(monkeypatch):
    import platform

    import torch

    first = experiment.keep_freed_memory()
    assert isinstance(first, bool)
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert first  # both mallopt settings took
    assert experiment.keep_freed_memory() == first  # idempotent
    # allocations and frees above the old thresholds still work afterwards
    for _ in range(3):
        x = torch.ones(8 * 2**20 // 4)
        assert float(x.sum()) == pytest.approx(8 * 2**20 / 4)
        del x
    monkeypatch.setattr(experiment.sys, "platform", "darwin")
    assert experiment.keep_freed_memory() is False  # silently skipped off Linux


def test_mean_curve_pads_unequal_curves_with_nan():
    full = [(0, 2.0), (33, 1.0), (66, 0.5)]
    short = [(0, 4.0), (33, 3.0)]  # a run that diverged after the second mark
    q, v = experiment.mean_curve([short, full])
    np.testing.assert_array_equal(q, [0, 33, 66])
    np.testing.assert_allclose(v, [3.0, 2.0, 0.5])
    q, v = experiment.mean_curve([full, full])
    np.testing.assert_allclose(v, [2.0, 1.0, 0.5])
    q, v = experiment.mean_curve([[], short])
    np.testing.assert_allclose(v, [4.0, 3.0])
    q, v = experiment.mean_curve([])
    assert q.size == 0 and v.size == 0


def test_train_records_test_accuracy_at_aligned_checkpoints():
    data = experiment._data()
    runs = {
        m: experiment._train(m, lr, 0, data, queries=33 * 12, batch=16, acc_points=7)
        for m, lr in (("BCCD", 1.0), ("SGD (first order)", 0.1))
    }
    for r in runs.values():
        acc = r["acc_curve"]
        assert len(acc) == 7
        q = [a for a, _ in acc]
        assert q[0] == 0 and q[-1] == 33 * 12 and all(np.diff(q) > 0)
        assert all(0.0 <= v <= 1.0 for _, v in acc)
        assert acc[-1][1] == pytest.approx(r["acc"], abs=1e-12)  # the final accuracy
        assert len(r["curve"]) == 12  # the loss curve keeps its own marks
    # the same query counts for every method at the same budget (curves align)
    assert [a for a, _ in runs["BCCD"]["acc_curve"]] == [
        a for a, _ in runs["SGD (first order)"]["acc_curve"]
    ]
    # fewer steps than checkpoints: no duplicates; none asked: none recorded
    r = experiment._train("BCCD", 1.0, 0, data, queries=33 * 3, batch=16, acc_points=7)
    assert [a for a, _ in r["acc_curve"]] == [0, 33, 66, 99]
    r0 = experiment._train("BCCD", 1.0, 0, data, queries=33 * 3, batch=16, acc_points=0)
    assert r0["acc_curve"] == []
    # evaluating consumes no random numbers: the same run, the same losses
    assert r0["final"] == pytest.approx(r["final"], abs=1e-12)
    np.testing.assert_allclose(np.array(r0["curve"]), np.array(r["curve"]), rtol=0, atol=1e-12)


def _fake_runs(methods, n_seeds=2, diverge=None):
    rng = np.random.default_rng(0)
    out = {}
    for m in methods:
        runs = []
        for s in range(n_seeds):
            n = 3 if (m == diverge and s == 0) else 7  # a diverged run stops early
            q = [33 * 10 * i for i in range(n)]
            runs.append(
                {
                    "init": 2.3,
                    "curve": [(a, 2.3 * 0.8**i) for i, a in enumerate(q)],
                    "acc_curve": [(a, float(v)) for a, v in zip(q, rng.random(n), strict=True)],
                }
            )
        out[m] = runs
    return out


def test_figures_build_one_panel_per_model_with_a_fixed_colour_per_method():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    assert set(experiment.COLOURS) == set(experiment.METHODS)
    assert len(set(experiment.COLOURS.values())) == len(experiment.COLOURS)  # all distinct
    panels = [
        ("mlp-digits", _fake_runs(list(experiment.METHODS), diverge="BCCD")),
        ("mlp-mnist", _fake_runs(list(experiment.MNIST_METHODS))),
    ]
    for key in ("curve", "acc_curve"):
        fig = experiment.curve_figure(panels, key, 2)
        axes = fig.axes
        assert len(axes) == 2
        for ax, (_, rr) in zip(axes, panels, strict=True):
            lines = {ln.get_label(): ln for ln in ax.get_lines()}
            for m in rr:
                assert to_hex(lines[m].get_color()) == experiment.COLOURS[m]
                assert len(lines[m].get_xdata()) == 7  # the longest run's checkpoints
            if key == "acc_curve":
                assert ax.get_ylim() == (0.0, 1.0)
                y = np.asarray(lines["BCCD"].get_ydata(), dtype=float)
                assert np.all((y >= 0) & (y <= 1))
        plt.close(fig)
    with pytest.raises(ValueError, match="key"):
        experiment.curve_figure(panels, "loss", 2)
