"""Pictures and reports beside relusym.plot and relusym.report (deep networks)."""

__all__: list[str] = []
