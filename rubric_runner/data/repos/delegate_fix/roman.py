"""Roman numerals."""

NUMERALS = [(1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I")]


def to_roman(number):
    """``number`` (1-3999) in Roman numerals."""
    if not 0 < number < 4000:
        raise ValueError(f"{number} has no Roman numeral")
    digits = []
    for value, numeral in NUMERALS:
        count, number = divmod(number, value)
        digits.append(numeral * count)
    return "".join(digits)
