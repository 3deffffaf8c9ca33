"""The fibre of a network: configurations, hidden flips and their search, minimal width, genericity, strata."""

__all__: list[str] = []
