"""The pictures' parts beside relusym.plot and relusym.report: geometry and windows, the look, the m = 1 and
m ≥ 2 panels, and the pictures and report of deep networks."""

__all__: list[str] = []
