"""What a session means: the tree index, context building, LLM conversion and usage totals.
Pure: works on entries in memory, never on files."""

__all__: list[str] = []
