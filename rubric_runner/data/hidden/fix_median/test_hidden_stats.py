from stats import median


def test_median_single():
    assert median([7]) == 7


def test_median_unsorted_even():
    assert median([10, -2, 4, 8]) == 6


def test_median_keeps_input():
    values = [3, 1, 2]
    median(values)
    assert values == [3, 1, 2]
