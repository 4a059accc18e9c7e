"""harness/compare/stats.py: Fisher's exact test on known tables, degenerate tables, and its
symmetries as properties (the Wilson interval is tested in test_compare.py)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fencepost.harness.compare.stats import fisher_exact, two_rates_p


def test_fisher_exact_known_values():
    assert fisher_exact([[3, 1], [1, 3]]) == pytest.approx(0.4857, abs=1e-4)  # Fisher's lady tasting tea
    assert two_rates_p(7, 10, 0, 10) == pytest.approx(0.0031, abs=1e-4)
    assert fisher_exact([[7, 3], [0, 10]]) == pytest.approx(0.003095975, rel=1e-6)
    assert fisher_exact([[1, 9], [11, 3]]) == pytest.approx(0.002759456, rel=1e-6)
    assert fisher_exact([[8, 2], [1, 5]]) == pytest.approx(0.034965035, rel=1e-6)
    assert two_rates_p(5, 5, 0, 5) == pytest.approx(2 / 252)  # only the two extreme tables
    assert two_rates_p(3, 5, 3, 5) == 1.0  # equal samples


def test_fisher_exact_symmetric_cases():
    assert two_rates_p(7, 10, 0, 10) == two_rates_p(0, 10, 7, 10) == two_rates_p(3, 10, 10, 10)
    assert fisher_exact([[2, 8], [6, 4]]) == fisher_exact([[8, 2], [4, 6]]) == fisher_exact([[6, 4], [2, 8]])


@pytest.mark.parametrize("table", [[[0, 0], [0, 0]], [[5, 0], [0, 0]], [[0, 0], [0, 7]], [[3, 4], [0, 0]],
                                   [[4, 0], [6, 0]], [[0, 3], [0, 9]], [[0, 0], [2, 2]]])
def test_fisher_exact_of_a_table_with_an_empty_row_or_column_is_one(table):
    assert fisher_exact(table) == 1.0


def test_fisher_exact_refuses_what_is_not_a_table_of_counts():
    with pytest.raises(ValueError, match="negative"):
        fisher_exact([[-1, 2], [3, 4]])
    with pytest.raises(ValueError, match="within"):
        two_rates_p(4, 3, 0, 1)


counts = st.integers(min_value=0, max_value=60)


@settings(max_examples=300, deadline=None)
@given(counts, counts, counts, counts)
def test_fisher_exact_is_a_probability_symmetric_in_samples_and_outcomes(a, b, c, d):
    p = fisher_exact([[a, b], [c, d]])
    assert 0.0 <= p <= 1.0
    assert fisher_exact([[c, d], [a, b]]) == p  # the two samples swapped
    assert fisher_exact([[b, a], [d, c]]) == p  # success and failure swapped
    assert fisher_exact([[a, c], [b, d]]) == p  # the table transposed: the same margins' law
