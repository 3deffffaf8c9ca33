"""Deep ReLU networks (two or more hidden layers): the MLP value, exact reductions, canonical form, equivalence."""

__all__: list[str] = []
