"""Tools over sessions: listing, search, stats, check/repair, and the display model (transcript,
content, summaries, tree lines) that every view renders."""

__all__: list[str] = []
