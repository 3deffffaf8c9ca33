"""Identification of a network from black-box queries."""

__all__: list[str] = []
