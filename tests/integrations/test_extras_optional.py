"""Every integration extra is optional: without them the library, the provider bodies and the
command line still load, and a command that needs one says which extra to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# Makes the extras' packages unimportable in a child interpreter, as if they were not installed.
BLOCK = textwrap.dedent(
    """
    import sys
    BLOCKED = {"mcp", "mcp_types", "agents", "claude_agent_sdk", "pydantic_ai", "openai"}

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Blocker())
    """
)


def _child(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK + textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


def test_library_and_providers_load_without_any_extra_sdk() -> None:
    result = _child(
        """
        import omp_session, omp_session.providers
        from omp_session.integrations.mcp_server import SessionQueries
        body = omp_session.providers.to_openai_chat([{"role": "user", "content": "hi", "timestamp": 1}])
        assert body["messages"] == [{"role": "user", "content": "hi"}], body
        loaded = {name.partition(".")[0] for name in sys.modules}
        assert not loaded & BLOCKED, loaded & BLOCKED
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_mcp_command_names_its_extra_when_mcp_is_missing(tmp_path: object) -> None:
    result = _child(
        f"""
        sys.argv = ["omp-session", "--dir", {str(tmp_path)!r}, "mcp"]
        from omp_session._launcher import main
        main()
        """
    )
    assert result.returncode == 2
    assert "pip install 'omp-session[mcp]'" in result.stderr, result.stderr
