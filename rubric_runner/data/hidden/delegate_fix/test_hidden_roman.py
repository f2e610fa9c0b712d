import pytest
from roman import to_roman


def test_every_subtractive_pair():
    assert [to_roman(n) for n in (4, 9, 40, 90, 400, 900)] == ["IV", "IX", "XL", "XC", "CD", "CM"]


def test_the_largest():
    assert to_roman(3999) == "MMMCMXCIX"


@pytest.mark.parametrize("number", [0, 4000])
def test_out_of_range(number):
    with pytest.raises(ValueError):
        to_roman(number)
