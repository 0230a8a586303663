"""``POST /api/import/<ref>``: import another agent's session into the sessions root, the viewer's
only write. It is refused unless it carries the token of a page this server rendered and comes
from the same origin (a cross-site form or script cannot make the viewer write).

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import hmac
import secrets
import urllib.parse
from pathlib import Path

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from omp_session.errors import SessionError
from omp_session.importers.base import AGENT_NAMES
from omp_session.web.catalog import SessionCatalog
from omp_session.web.foreign import ForeignMirror, agent_of_ref
from omp_session.web.responses import Text, not_found

__all__ = ["ForeignImport"]


class ForeignImport:
    """The import route and what the foreign session pages need to offer it."""

    def __init__(self, foreign: ForeignMirror | None, root: Path, catalog: SessionCatalog) -> None:
        self._foreign = foreign
        self._root = root
        self._catalog = catalog
        #: Proves an import POST came from a page this server rendered (with the Origin check).
        self.token = secrets.token_urlsafe(32)

    def page_facts(self, path: Path, ref: str) -> dict[str, str] | None:
        """For the page of another agent's session: its agent, source file and the import token;
        ``None`` for an omp session."""
        agent = agent_of_ref(ref)
        if agent is None or self._foreign is None:
            return None
        info = self._foreign.info_of(path)
        source = info.path if info else ""
        return {"agent": AGENT_NAMES.get(agent, agent), "source": source, "token": self.token}

    def _same_origin(self, request: Request, token: str) -> bool:
        # The token (only in pages this server rendered; another site cannot read them) is the
        # guard; a browser's own same-origin signals must agree too. Origin is "null" under our
        # no-referrer policy, so only a concrete foreign Origin is refused.
        origin = request.headers.get("origin")
        fetch_site = request.headers.get("sec-fetch-site")
        expected_origin = f"{request.url.scheme}://{request.url.netloc}"
        foreign_origin = origin not in (None, "null", expected_origin)
        cross_site = fetch_site is not None and fetch_site not in ("same-origin", "none")
        return hmac.compare_digest(token, self.token) and not foreign_origin and not cross_site

    async def handle(self, request: Request) -> Response:
        """Import another agent's session into the sessions root, then show the omp session."""
        ref = str(request.path_params["ref"])
        body = await request.body()
        form = urllib.parse.parse_qs(body[:4096].decode("utf-8", "replace"))  # a token, nothing more
        if not self._same_origin(request, (form.get("token") or [""])[0]):
            return Text("refused: not a request from this viewer's page", status_code=403)
        if self._foreign is None or agent_of_ref(ref) is None:
            return not_found()
        try:
            outcome = self._foreign.import_into(ref, self._root)
        except (SessionError, OSError) as exc:
            return Text(f"import failed: {exc}", status_code=422)
        if outcome is None or outcome.path is None:
            return not_found()
        target = self._catalog.ref_of(outcome.path)
        if target is None:
            return Text(f"imported to {outcome.path} (outside this viewer's root)")
        return RedirectResponse(f"/session/{target}?imported={outcome.status}", status_code=303)
