"""The explicit tolerance mode: approximate equivalence, distances, alignment of noisy copies."""

__all__: list[str] = []
