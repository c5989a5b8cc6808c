"""Run a documentation example and say where it showed nothing: a loop whose body never ran, or a value it
shows that is None or empty.

The example's syntax tree is rewritten before it is compiled, so only the example's own lines are watched (no
tracer slows the library it calls):

- every ``for`` statement's and every comprehension's iterable is wrapped, and a loop that yields nothing is
  reported ("the loop over … never ran");
- every value the example shows is checked: an expression statement (each element of a bare tuple ``a, b``)
  and each argument of a ``print(...)``, outside the functions and classes it defines. A value is reported when
  it is None or has no items (``len`` 0: an empty frame, list, dict or string); ``False`` and ``0`` are values.
  A call statement that returns None is a command when its callee is annotated ``-> None`` or when it is not
  the example's last statement (``ex.run(); ex.outputs``); the last one is what a notebook would show.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import Any

_ITER, _SHOW, _CALLEE = "__example_iter__", "__example_show__", "__example_callee__"


class _Instrument(ast.NodeTransformer):
    """Wraps loop iterables and shown values in calls to the probe's hooks; each site gets a number, and
    ``sites`` says which expression of the example it is."""

    def __init__(self) -> None:
        self.sites: list[str] = []   # per site: its expression and line, for the findings
        self.inside = 0              # > 0 within a function or class the example defines
        self.last: ast.stmt | None = None

    def visit_For(self, node: ast.For) -> ast.AST:
        site = self._site(node.iter)
        self.generic_visit(node)
        node.iter = _hook(_ITER, site, node.iter)
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        site = self._site(node.iter)
        self.generic_visit(node)
        node.iter = _hook(_ITER, site, node.iter)
        return node

    def visit_Module(self, node: ast.Module) -> ast.AST:
        self.last = node.body[-1] if node.body else None
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._code(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._code(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return self._code(node)

    def _code(self, node: ast.AST) -> ast.AST:
        """Code the example defines (an agent's action, an observer) shows nothing itself: only its loops count."""
        self.inside += 1
        self.generic_visit(node)
        self.inside -= 1
        return node

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        value = node.value
        if self.inside or isinstance(value, ast.Constant):   # a bare string is a comment, not a shown value
            self.generic_visit(node)
            return node
        if isinstance(value, ast.Tuple):
            sites = [self._site(e) for e in value.elts]
            self.generic_visit(node)
            value.elts = [_hook(_SHOW, site, e) for site, e in zip(sites, value.elts)]
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "print":
            sites = [self._site(a) for a in value.args]
            self.generic_visit(node)
            value.args = [_hook(_SHOW, site, a) for site, a in zip(sites, value.args)]
        else:
            site = self._site(value)
            self.generic_visit(node)
            if isinstance(value, ast.Call):   # the callee tells a command (-> None) from a value that is None
                value.func = _hook(_CALLEE, site, value.func, command=node is not self.last)
            node.value = _hook(_SHOW, site, node.value)
        return node

    def _site(self, value: ast.expr) -> int:
        self.sites.append(f"{ast.unparse(value)} (line {value.lineno})")
        return len(self.sites) - 1


def _hook(name: str, site: int, value: ast.expr, *, command: bool = False) -> ast.Call:
    """``name(site, value)``: a probe hook sees ``value`` at ``site``; ``command``: a call statement not last."""
    args = [ast.Constant(site), value, *([ast.Constant(True)] if command else [])]
    return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=args, keywords=[])


def _is_command(callee: object) -> bool:
    """A callable annotated to return None (``-> None``): called for what it does, not for a value."""
    try:
        returns = inspect.signature(callee).return_annotation  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return returns is None or returns == "None"


def _empty(value: object) -> bool:
    if value is None:
        return True
    if hasattr(value, "__len__") and not isinstance(value, type):
        try:
            return len(value) == 0  # type: ignore[arg-type]
        except TypeError:   # an object whose len() is undefined
            return False
    return False


class Probe:
    """The hooks one run of an example calls, and what they saw (``nothing()``: the findings, in words)."""

    def __init__(self, sites: list[str]) -> None:
        self.sites = sites
        self.ran: dict[int, bool] = {}          # loop site -> its body ran
        self.shown: dict[int, bool] = {}        # value site -> it ever showed something
        self.empty: dict[int, str] = {}         # value site -> what it showed when it showed nothing
        self.commands: set[int] = set()         # call sites whose None is no shown value

    def hooks(self) -> dict[str, Callable[..., Any]]:
        return {_ITER: self._iter, _SHOW: self._show, _CALLEE: self._callee}

    def _iter(self, site: int, iterable: Iterable[Any]) -> Iterator[Any]:
        self.ran.setdefault(site, False)
        for item in iterable:
            self.ran[site] = True
            yield item

    def _callee(self, site: int, callee: object, command: bool = False) -> object:
        if command or _is_command(callee):
            self.commands.add(site)
        return callee

    def _show(self, site: int, value: object) -> object:
        if not _empty(value) or (value is None and site in self.commands):
            self.shown[site] = True
        else:
            self.shown.setdefault(site, False)
            self.empty.setdefault(site, "None" if value is None else f"an empty {type(value).__name__}")
        return value

    def nothing(self) -> list[str]:
        loops = [f"the loop over {self.sites[s]} never ran" for s, ran in self.ran.items() if not ran]
        values = [f"{self.sites[s]} is {self.empty[s]}" for s, shown in self.shown.items() if not shown]
        return loops + values


def run_example(block: str, name: str, namespace: dict[str, object]) -> list[str]:
    """Run ``block`` (an example's code) in ``namespace``; what it showed nothing of (see the module)."""
    instrument = _Instrument()
    tree = ast.fix_missing_locations(instrument.visit(ast.parse(block)))
    probe = Probe(instrument.sites)
    exec(compile(tree, name, "exec"), {**namespace, **probe.hooks()})
    return probe.nothing()
