"""Reference solutions for rubric_runner/data/datasets/code_tasks.jsonl (checked in the sandbox)."""

import re


def find_duplicates(lst):
    seen, duplicates = [], []
    for item in lst:
        if item in seen and item not in duplicates:
            duplicates.append(item)
        seen.append(item)
    return duplicates


def flatten(nested):
    flat = []
    for item in nested:
        flat.extend(flatten(item) if isinstance(item, list) else [item])
    return flat


def is_palindrome(text):
    kept = [c.lower() for c in text if c.isalnum()]
    return kept == kept[::-1]


def run_length_encode(text):
    runs = []
    for char in text:
        if runs and runs[-1][0] == char:
            runs[-1][1] += 1
        else:
            runs.append([char, 1])
    return runs


def merge_intervals(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def roman_to_int(numeral):
    values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for i, char in enumerate(numeral):
        value = values[char]
        total += -value if i + 1 < len(numeral) and values[numeral[i + 1]] > value else value
    return total


def chunk(items, size):
    if size < 1:
        raise ValueError("size must be at least 1")
    return [items[i : i + size] for i in range(0, len(items), size)]


def word_frequencies(text):
    counts = {}
    for word in re.findall(r"[a-z']+", text.lower()):
        counts[word] = counts.get(word, 0) + 1
    return counts


def second_largest(numbers):
    distinct = sorted(set(numbers), reverse=True)
    return distinct[1] if len(distinct) > 1 else None


def balanced_brackets(text):
    pairs, stack = {")": "(", "]": "[", "}": "{"}, []
    for char in text:
        if char in "([{":
            stack.append(char)
        elif char in pairs and (not stack or stack.pop() != pairs[char]):
            return False
    return not stack


def rotate_matrix(matrix):
    return [list(row) for row in zip(*matrix[::-1])]


def fizzbuzz(n):
    return ["FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0 else str(i) for i in range(1, n + 1)]
