"""Shared fakes and helpers of the test suite: scripted runs, fake providers, sweeps, a browser."""
