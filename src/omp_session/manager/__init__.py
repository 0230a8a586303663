"""The :class:`SessionManager` façade: omp's session API in snake_case over a store and an index."""

from omp_session.manager.session_manager import SessionManager

__all__ = ["SessionManager"]
