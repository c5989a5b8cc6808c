"""A rule under test, guarded: a hook that raises or returns the wrong type makes the rule *broken*."""

from __future__ import annotations

import inspect
import os
import traceback
from types import TracebackType
from typing import Any

from agent_inspect._errors import RecoveryError
from agent_inspect.store import DivergenceRule, Entry, LookupDecision, PruneResult, RecoverySession, RuleState, Task

__all__ = ["BrokenRuleError", "GuardedRule", "guard_own"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# what each hook must return (None allowed where the protocol says so)
_RETURNS: dict[str, tuple[tuple[type, ...], bool, str]] = {
    "new_state": ((RuleState,), False, "a RuleState"),
    "rebuild": ((Entry,), True, "an Entry or None"),
    "lookup": ((LookupDecision,), False, "a LookupDecision (LookupDecision.found(entry) or LookupDecision.fail(reason))"),
    "on_reuse": ((object,), True, "None"),
    "on_write": ((Entry,), False, "an Entry"),
    "on_refresh": ((Entry,), False, "an Entry"),
    "prune": ((PruneResult,), False, "a PruneResult"),
}


class BrokenRuleError(RecoveryError):
    """A divergence rule's hook raised, or returned the wrong type: the rule is broken (not unsafe).

    ``rule``, ``hook`` and ``where`` (``file:line`` in the rule's own code, when found) say where;
    ``error`` is the original exception (None for a wrong return type). ``str()`` is one line ending in the
    next step: what to fix, and for a hook that raised, how to see its traceback (run the rule in Python:
    the error a verb raises is chained to the hook's exception). ``call`` is the rule's constructor as
    that step writes it (``MyRule()``).
    """

    def __init__(self, rule: str, hook: str, problem: str, where: str | None,
                 error: BaseException | None = None, call: str | None = None, raised: bool | None = None) -> None:
        self.rule, self.hook, self.problem, self.where, self.error = rule, hook, problem, where, error
        self.call = call
        self.raised = error is not None if raised is None else raised
        at = f" at {where}" if where else ""
        if self.raised:
            step = (f"fix {hook}() at that line (its traceback: run the rule in Python, e.g. "
                    f"ai.predict(log, rule={call or 'MyRule()'}); the hook's exception is raised above this error)")
        else:
            step = f"make every path of {hook}() return one"
        super().__init__(f"rule {rule!r} is broken: {hook}(){at}: {problem}; {step}")

    def __reduce__(self) -> tuple[type[BrokenRuleError], tuple[str, str, str, str | None, None, str | None, bool]]:
        """Pickled by its fields (a scan's worker sends it back); the original exception stays behind."""
        return type(self), (self.rule, self.hook, self.problem, self.where, None, self.call, self.raised)


class GuardedRule(DivergenceRule):
    """Delegates to ``inner`` and turns its first failure into a :class:`BrokenRuleError` (kept in ``broken``).

    Drivers may swallow exceptions (the predictor journals a sub-agent call's exception as a FAILED
    result), so ``broken`` keeps the first failure however deep the hook was called.

    For example::

        guarded = ai.rules.GuardedRule(ai.rules.FixedRule())   # a failing hook becomes BrokenRuleError
        ai.predict(log, markers=markers, rule=guarded)
        guarded.broken                                          # None: the rule never failed
    """

    def __init__(self, inner: DivergenceRule) -> None:
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]  # the rule's own label, per instance
        self.summary = inner.summary  # type: ignore[misc]
        self.protects = inner.protects  # type: ignore[misc]
        self.restore_checks = inner.restore_checks  # type: ignore[misc]
        self.broken: BrokenRuleError | None = None

    def __getattr__(self, name: str) -> Any:
        if name == "inner":   # not set yet (a copy or an unpickling): no loop through __getattr__
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def wrapped_rule(self) -> DivergenceRule:
        """The rule it guards (its class's declarations, such as ``repeatable_lookup``, still hold)."""
        return self.inner

    def _call(self, hook: str, *args: Any) -> Any:
        try:
            result = getattr(self.inner, hook)(*args)
        except BrokenRuleError:
            raise
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
            raise self._fail(hook, problem, rule_frame(exc.__traceback__, self.inner, hook), exc) from exc
        types, none_ok, want = _RETURNS[hook]
        if (result is None and not none_ok) or (result is not None and not isinstance(result, types)):
            got = "None" if result is None else type(result).__name__
            raise self._fail(hook, f"returned {got}, expected {want}", hook_line(self.inner, hook))
        return result

    def _fail(self, hook: str, problem: str, where: str | None, exc: BaseException | None = None) -> BrokenRuleError:
        err = BrokenRuleError(self.inner.name, hook, problem, where, exc, call=f"{type(self.inner).__name__}()",
                              raised=exc is not None)
        if self.broken is None:
            self.broken = err
        return err

    def new_state(self) -> RuleState:
        return self._call("new_state")  # type: ignore[no-any-return]

    def rebuild(self, session: RecoverySession, entry: Entry) -> Entry | None:
        return self._call("rebuild", session, entry)  # type: ignore[no-any-return]

    def lookup(self, session: RecoverySession, task: Task) -> LookupDecision:
        return self._call("lookup", session, task)  # type: ignore[no-any-return]

    def on_reuse(self, session: RecoverySession, task: Task, entry: Entry) -> None:
        self._call("on_reuse", session, task, entry)

    def on_write(self, session: RecoverySession, entry: Entry) -> Entry:
        return self._call("on_write", session, entry)  # type: ignore[no-any-return]

    def on_refresh(self, session: RecoverySession, entry: Entry) -> Entry:
        return self._call("on_refresh", session, entry)  # type: ignore[no-any-return]

    def prune(self, session: RecoverySession, business_key: str, seq: int, key_text: str | None) -> PruneResult:
        return self._call("prune", session, business_key, seq, key_text)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<guarded {self.inner!r}>"


def guard_own(rule: DivergenceRule) -> DivergenceRule:
    """``rule`` guarded when it is a user's (its class is not agent_inspect's): a verb that runs it then fails with
    one :class:`BrokenRuleError` naming the rule, the hook and what it raised or returned, not deep in the engine.

    For example::

        ai.rules.guard_own(ai.rules.FixedRule())   # a built-in rule is returned as it is
    """
    if type(rule).__module__.startswith("agent_inspect.") or isinstance(rule, GuardedRule):
        return rule
    return GuardedRule(rule)


def hook_line(rule: DivergenceRule, hook: str) -> str | None:
    """``file:line`` of the hook's definition in the rule's class (None when it has no source)."""
    fn = getattr(type(rule), hook, None)
    try:
        path = inspect.getsourcefile(fn) if fn is not None else None
        _, line = inspect.getsourcelines(fn) if fn is not None else (None, 0)
    except (OSError, TypeError):
        return None
    return f"{path}:{line}" if path else None


def rule_frame(tb: TracebackType | None, rule: DivergenceRule, hook: str) -> str | None:
    """``file:line`` of the deepest frame in the rule's own code: its class's file, else outside agent_inspect."""
    frames = traceback.extract_tb(tb)
    own = _class_file(rule)
    for test in ((lambda f: own is not None and os.path.abspath(f.filename) == own),
                 (lambda f: not os.path.abspath(f.filename).startswith(_PACKAGE + os.sep))):
        hits = [f for f in frames if test(f)]
        if hits:
            return f"{hits[-1].filename}:{hits[-1].lineno}"
    return hook_line(rule, hook)


def _class_file(rule: DivergenceRule) -> str | None:
    try:
        path = inspect.getsourcefile(type(rule))
    except (OSError, TypeError):
        return None
    return os.path.abspath(path) if path else None
