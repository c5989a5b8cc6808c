"""In IPython, an InspectError prints as one line with its advice; other errors keep IPython's traceback."""

from __future__ import annotations

import pytest


@pytest.fixture()
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    yield shell
    InteractiveShell.clear_instance()


def test_inspect_error_is_one_line_with_the_full_traceback_kept(shell, capsys, tmp_path) -> None:
    import agent_inspect._ipython as display

    shell.custom_exceptions = ()
    shell._agent_inspect_errors = False  # importing agent_inspect may have installed it already
    assert display.install() is True
    assert display.install() is False  # once per shell
    shell.run_cell(f"import agent_inspect as ai\nai.load({str(tmp_path / 'missing.jsonl')!r})")
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [f"SourceError: cannot open '{tmp_path / 'missing.jsonl'}': No such file or directory; "
                     "check the path  (%tb shows the full traceback)"]
    import sys

    assert type(sys.last_value).__name__ == "SourceError" and sys.last_traceback is not None


def test_other_errors_keep_the_traceback(shell, capsys) -> None:
    import agent_inspect._ipython as display

    shell.custom_exceptions = ()
    shell._agent_inspect_errors = False
    display.install()
    shell.run_cell("1 / 0")
    out = capsys.readouterr()
    assert "ZeroDivisionError" in out.out + out.err and "Traceback" in out.out + out.err


def test_install_outside_ipython_is_a_no_op(monkeypatch) -> None:
    import sys

    import agent_inspect._ipython as display

    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert display.install() is False
