"""BlockMatrix: the anti-upper triangular pattern and its errors."""

import numpy as np
import pytest
import scipy.sparse as sp
from prox_admm import BlockMatrix
from scipy.sparse.linalg import aslinearoperator


def test_pattern_and_accessors():
    eye = np.eye(2)
    A = BlockMatrix(
        {(0, 0): eye, (0, 2): -eye, (1, 0): sp.eye_array(2), (1, 1): aslinearoperator(-eye)},
        ([2, 2], [2, 2, 2]),
    )
    assert A.shape == (4, 6) and A.rows_of == [[0, 1], [1], [0]] and A.cols_of == [[0, 2], [0, 1]]
    dense = A.to_dense()
    np.testing.assert_allclose(
        dense, [[1, 0, 0, 0, -1, 0], [0, 1, 0, 0, 0, -1], [1, 0, -1, 0, 0, 0], [0, 1, 0, -1, 0, 0]]
    )
    x = [np.ones(2), 2 * np.ones(2), 3 * np.ones(2)]
    r = A.residuals(x, [np.zeros(2), np.ones(2)])
    np.testing.assert_allclose(np.concatenate(r), dense @ np.concatenate(x) - [0, 0, 1, 1])


def test_rejects_a_block_above_the_anti_diagonal_and_names_it():
    eye = np.eye(2)
    with pytest.raises(
        ValueError,
        match=r"block \(1, 2\) lies above the anti-diagonal: row 1 may involve blocks 0..1",
    ):
        BlockMatrix({(0, 0): eye, (1, 0): eye, (1, 2): eye}, ([2, 2], [2, 2, 2]))
    full = np.ones((4, 6))
    with pytest.raises(ValueError, match=r"block \(1, 2\)"):
        BlockMatrix.from_dense(full, [2, 2], [2, 2, 2])
    ok = np.ones((4, 6))
    ok[2:, 4:] = 0.0
    assert BlockMatrix.from_dense(ok, [2, 2], [2, 2, 2]).n_rows == 2


@pytest.mark.parametrize(
    ("blocks", "shapes", "err", "match"),
    [
        (
            {(0, 0): np.eye(3)},
            ([2], [2]),
            ValueError,
            r"block \(0, 0\) has shape \(3, 3\), expected \(2, 2\)",
        ),
        ({(0, 5): np.eye(2)}, ([2], [2]), ValueError, "out of range"),
        ({(0, 0): np.eye(2)}, ([2, 2], [2]), ValueError, "at most m = 1 rows"),
        ({(0, 0): np.eye(2)}, ([2], [2, 2]), ValueError, "block column 1 appears in no row"),
        (
            {(0, 0): np.eye(2), (0, 1): np.eye(2)},
            ([2, 2], [2, 2]),
            ValueError,
            "row 1 has no block",
        ),
        ({(0, 0): np.array([[np.nan, 0], [0, 1]])}, ([2], [2]), ValueError, "NaN"),
        ({(0, 0): "eye"}, ([2], [2]), TypeError, "LinearOperator"),
        ({(0.0, 0): np.eye(2)}, ([2], [2]), TypeError, "pairs of integers"),
        ({(0, 0): np.eye(2)}, ([0], [2]), ValueError, "row_sizes"),
    ],
)
def test_bad_input(blocks, shapes, err, match):
    with pytest.raises(err, match=match):
        BlockMatrix(blocks, shapes)
