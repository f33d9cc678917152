"""The SKI Gram kept per layout (``gram.layout_gram``): the same numbers as a fresh
``ski_gram``, read-only, and an error curve that reuses it for a second kernel (a move of λ)
equal to one computed from nothing."""

from __future__ import annotations

import numpy as np
import pytest

from tnn_core.analysis.curves import CURVE_RANKS, error_curve
from tnn_core.analysis.gram import band_lags, layout_gram, ski_gram
from tnn_core.analysis.presets import synthetic_kernel
from tnn_core.core.interpolation import interpolation


@pytest.mark.parametrize(("n", "r", "band", "causal"),
                         [(2, 2, 1, False), (3, 2, 3, True), (7, 4, 5, False),
                          (13, 5, 9, True), (97, 13, 31, False)])
def test_kept_gram_is_a_fresh_one_and_read_only(n, r, band, causal):
    kept = layout_gram(n, r, band, causal)
    fresh = ski_gram(interpolation(n, r), band_lags(n, band, causal))  # scattered, if narrow
    for name in ("lags", "counts", "diagonal", "gram"):
        np.testing.assert_allclose(getattr(kept, name), getattr(fresh, name), rtol=1e-14,
                                   atol=1e-14 * n)  # the table's exact sums, the scatter's
        with pytest.raises(ValueError, match="read-only"):
            getattr(kept, name)[...] = 0


def test_a_curve_that_reuses_the_layout_equals_one_from_nothing():
    band = 31
    first = synthetic_kernel("spike_smooth", 257, 0.99).double().numpy()
    second = synthetic_kernel("spike_smooth", 257, 0.9).double().numpy()
    layout_gram.cache_clear()
    error_curve(first, band, CURVE_RANKS)
    reused = error_curve(second, band, CURVE_RANKS)  # every rank's Gram from the cache
    assert layout_gram.cache_info().hits >= len(reused.ranks)
    layout_gram.cache_clear()
    alone = error_curve(second, band, CURVE_RANKS)
    for name in ("sample", "fit", "optimal"):
        np.testing.assert_array_equal(getattr(reused, name), getattr(alone, name))
