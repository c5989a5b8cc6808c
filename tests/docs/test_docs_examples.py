"""The names most sessions use (``ai.NAME``) each show a short example in their reference entry."""

from __future__ import annotations

import inspect

import agent_inspect as ai

# errors and configure explain themselves in prose; infer_markers is moving to agent_inspect.markers
WITHOUT_EXAMPLE = {"configure", "infer_markers"}


def test_top_level_verbs_and_classes_have_an_example() -> None:
    lacking = []
    for name in ai.__all__:
        obj = getattr(ai, name)
        if inspect.ismodule(obj) or name in WITHOUT_EXAMPLE or (inspect.isclass(obj) and issubclass(obj, Exception)):
            continue
        if "For example::" not in (inspect.getdoc(obj) or ""):
            lacking.append(name)
    assert lacking == []
