"""The HTML of a session, shared by the viewer (web/) and the HTML export (export/): templates,
blocks and the windowed page over the display model of tools/.

Internal package; not part of the public API.
"""

__all__: list[str] = []
