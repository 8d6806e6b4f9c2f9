"""Each page loads every script once.

Jupyter Book 1.x registers the Thebe and toggle-button configuration scripts twice, and a second
``const THEBE_JS_URL`` is a JavaScript error on every page; this drops exact repeats, keeping order.
"""

from __future__ import annotations


def _unique_scripts(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for script in context.get("script_files", []):
        # the tag a script renders to: its file and attributes (a body script has no file), not its priority
        key = (str(getattr(script, "filename", script) or ""), tuple(sorted(getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    app.connect("html-page-context", _unique_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
