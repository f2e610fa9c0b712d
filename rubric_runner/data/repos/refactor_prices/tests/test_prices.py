from prices import discounted, invoice_total, order_total


def test_discounted():
    assert discounted(10, 15) == 8.5


def test_order_total():
    assert order_total([10, 20], 10) == 27


def test_invoice_total():
    assert invoice_total([(5, 2), (1, 4)], 50) == 7
