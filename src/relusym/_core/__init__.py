"""The one-hidden-layer core: the network, the group H_n, the normal form and its digest, exact equivalence."""

__all__: list[str] = []
