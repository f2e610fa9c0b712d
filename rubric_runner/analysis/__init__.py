"""Figures the loop and the reports share: prices, spend, and how far a grader can be trusted."""
