"""Bridges to what agents use: provider request bodies, agent-SDK session backends, an MCP server.

Each bridge lives in its own subpackage and imports its SDK only there, behind that SDK's extra;
``omp_session.integrations.providers`` needs no SDK at all.
"""

__all__: list[str] = []
