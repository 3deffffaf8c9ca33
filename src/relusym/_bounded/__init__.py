"""Bounded input domains (boxes and polytopes): restriction, decision and distance on a domain."""

__all__: list[str] = []
