import pytest
from prices import invoice_total, order_total


@pytest.mark.parametrize("percent", [-5, 101])
def test_a_discount_out_of_range_is_refused(percent):
    with pytest.raises(ValueError):
        order_total([10], percent)
    with pytest.raises(ValueError):
        invoice_total([(10, 1)], percent)


def test_totals_are_to_the_cent():
    assert order_total([0.1, 0.2], 0) == 0.3
    assert invoice_total([(19.99, 3)], 10) == 53.97
