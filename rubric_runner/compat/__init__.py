"""Assumptions about other packages' internals, one module per package, each pinned by a named test."""
