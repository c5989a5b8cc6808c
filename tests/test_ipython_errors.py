"""In IPython, an InspectError prints as one line with its advice once asked for; other errors keep their handling."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture()
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    yield shell
    InteractiveShell.clear_instance()


def _missing(tmp_path) -> str:
    return str(tmp_path / "missing.jsonl")


def _short_line(tmp_path) -> list[str]:
    return [f"SourceError: cannot open '{_missing(tmp_path)}': No such file or directory; "
            "check the path  (%tb shows the full traceback)"]


def _err_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_import_leaves_the_shell_alone_and_load_ext_opts_in(shell, capsys, tmp_path) -> None:
    shell.run_cell(f"import agent_inspect as ai\nai.load({_missing(tmp_path)!r})")
    out = capsys.readouterr()
    assert shell.custom_exceptions == () and "Traceback" in out.out + out.err
    shell.run_cell("%load_ext agent_inspect")
    shell.run_cell(f"ai.load({_missing(tmp_path)!r})")
    assert _err_lines(capsys) == _short_line(tmp_path)
    assert type(sys.last_value).__name__ == "SourceError" and sys.last_traceback is not None
    shell.run_cell("%unload_ext agent_inspect")
    shell.run_cell(f"ai.load({_missing(tmp_path)!r})")
    out = capsys.readouterr()
    assert shell.custom_exceptions == () and "Traceback" in out.out + out.err


def test_configure_errors_short_and_full(shell, capsys, tmp_path) -> None:
    shell.run_cell(f"import agent_inspect as ai\nai.configure(errors='short')\nai.configure(errors='short')\n"
                   f"ai.load({_missing(tmp_path)!r})")
    assert _err_lines(capsys) == _short_line(tmp_path)
    shell.run_cell(f"ai.configure(errors='full')\nai.load({_missing(tmp_path)!r})")
    out = capsys.readouterr()
    assert "Traceback" in out.out + out.err and shell.custom_exceptions == ()


def test_a_handler_the_user_had_keeps_its_exceptions(shell, capsys, tmp_path) -> None:
    seen: list[str] = []

    def mine(self, etype, value, tb, tb_offset=None):
        seen.append(type(value).__name__)

    shell.set_custom_exc((ZeroDivisionError,), mine)
    shell.run_cell("import agent_inspect as ai\nai.configure(errors='short')\n1 / 0\n")
    shell.run_cell(f"ai.load({_missing(tmp_path)!r})")
    assert seen == ["ZeroDivisionError"] and _err_lines(capsys) == _short_line(tmp_path)
    shell.run_cell("ai.configure(errors='full')\n1 / 0")
    assert seen == ["ZeroDivisionError"] * 2 and shell.custom_exceptions == (ZeroDivisionError,)


def test_other_errors_keep_the_traceback(shell, capsys) -> None:
    shell.run_cell("%load_ext agent_inspect\n")
    shell.run_cell("1 / 0")
    out = capsys.readouterr()
    assert "ZeroDivisionError" in out.out + out.err and "Traceback" in out.out + out.err


def test_outside_ipython(monkeypatch) -> None:
    import agent_inspect as ai
    import agent_inspect._ipython as display

    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert display.install() is False and display.uninstall() is False
    with pytest.raises(ai.InspectError, match="needs a running IPython"):
        ai.configure(errors="short")
    with pytest.raises(ai.InspectError, match="unknown errors="):
        ai.configure(errors="loud")  # type: ignore[arg-type]


def test_the_short_line_writes_control_characters_out(shell, capsys) -> None:
    # a message quoting a key from the log (explain's "no task <key>@5 …"): its escapes are shown, never obeyed,
    # and a carriage return in the key does not cut the line short
    shell.run_cell("import agent_inspect as ai\nai.configure(errors='short')\n"
                   "raise ai.InspectError('no task k\\x1b]0;pwned\\x07\\r\\x9b2J\\u202e\\x00@5 A')")
    assert _err_lines(capsys) == ["InspectError: no task k\\x1b]0;pwned\\x07\\x0d\\u009b2J\\u202e\\x00@5 A"
                                  "  (%tb shows the full traceback)"]
