"""Foundations: files, limits, progress, random generators, threads, how values look to a person."""

__all__: list[str] = []
