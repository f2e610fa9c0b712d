"""The grader: how its verdict comes back, and what a verdict must rest on."""
