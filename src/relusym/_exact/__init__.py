"""Exact arithmetic: scalars, float mantissas, decimal text, linear algebra over Q and modulo p, subset sums."""

__all__: list[str] = []
