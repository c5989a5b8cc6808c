"""A griffe extension: the package's docstrings use a few reST habits; render them as Markdown.

``:func:`x``` / ``:class:`~a.b.C``` become code spans, and a paragraph ending in ``::`` (reST's "a literal
block follows") ends in ``:`` (the indented block after it is already a Markdown code block).
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension

_ROLE = re.compile(r":(?:func|class|meth|attr|data|mod|exc|obj|const):`~?([^`]+)`")
_LITERAL = re.compile(r"::\n")


def _markdown(obj: Any) -> None:
    docstring = getattr(obj, "docstring", None)
    if docstring is not None:
        docstring.value = _LITERAL.sub(":\n", _ROLE.sub(lambda m: f"`{m.group(1)}`", docstring.value))


class RestRoles(Extension):
    def on_object(self, *, obj: Any, **kwargs: Any) -> None:
        _markdown(obj)

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:   # the root package is not passed to on_object
        _markdown(pkg)
