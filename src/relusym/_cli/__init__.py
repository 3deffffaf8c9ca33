"""The command line's parts (front end): parsing, the one error path, and one module per group of commands.
``relusym.cli.main`` is the entry point; nothing here holds mathematics."""

__all__: list[str] = []
