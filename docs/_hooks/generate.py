"""MkDocs hooks: the pages the site generates from the code at build time, never written by hand.

- ``reference/api/*.md``: one page per public package, every name of its ``__all__`` rendered by mkdocstrings
  (each object once, on the first page that exports it; later pages link to it);
- ``reference/cli.md``: every subcommand of ``agent-inspect`` from its argparse parser;
- ``notebooks/*.ipynb``: the notebooks, executed once in a scratch copy (cached by content in
  ``.docs-cache/``) and rendered with their outputs by mkdocs-jupyter;
- ``changelog.md``: CHANGELOG.md;
- ``reference/glossary.md``: ``agent_inspect._glossary.GLOSSARY`` when that module exists (GLOSSARY HOOK).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib
import inspect
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".docs-cache"
NOTEBOOKS = REPO / "notebooks"


# -- the public surface ---------------------------------------------------------------------------------


def public_packages() -> list[str]:
    """``agent_inspect`` and each public subpackage it lists, in layer order, with the engine's public seams
    (``agent_inspect.recovery.engine``) after ``recovery``."""
    import agent_inspect

    packages = ["agent_inspect", *(f"agent_inspect.{name}" for name in agent_inspect._SUBMODULES)]
    at = packages.index("agent_inspect.recovery") + 1
    return [*packages[:at], "agent_inspect.recovery.engine", *packages[at:]]


def public_names(package: str) -> list[str]:
    """A package's ``__all__`` without its subpackages (they have their own pages)."""
    module = importlib.import_module(package)
    return [n for n in module.__all__ if not inspect.ismodule(getattr(module, n, None))]


def _identity(obj: Any) -> tuple[str, str] | None:
    """What makes two exports the same object: functions and classes only (constants are per package)."""
    if inspect.isclass(obj) or inspect.isfunction(obj):
        return obj.__module__, obj.__qualname__
    return None


def api_pages() -> dict[str, tuple[str, list[str], dict[str, str]]]:
    """package -> (title, names rendered on its page, {name: identifier of the entry on an earlier page})."""
    import agent_inspect

    seen: dict[tuple[str, str], str] = {}
    pages: dict[str, tuple[str, list[str], dict[str, str]]] = {}
    for package in public_packages():
        module = importlib.import_module(package)
        rendered: list[str] = []
        elsewhere: dict[str, str] = {}
        for name in public_names(package):
            obj = getattr(module, name)
            ident = _identity(obj)
            if package == "agent_inspect" and name in agent_inspect._LAZY:
                identifier = f"{agent_inspect._LAZY[name]}.{name}"     # where griffe finds a lazy name
            else:
                identifier = f"{package}.{name}"
            if ident is not None and ident in seen:
                elsewhere[name] = seen[ident]
                continue
            if ident is not None:
                seen[ident] = identifier
            rendered.append(identifier)
        title = "agent_inspect (ai)" if package == "agent_inspect" else package
        pages[package] = (title, rendered, elsewhere)
    return pages


def _summary(package: str) -> str:
    doc = inspect.getdoc(importlib.import_module(package)) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def api_markdown(package: str, title: str, rendered: list[str], elsewhere: dict[str, str]) -> str:
    lines = [f"# {title}", ""]
    if package == "agent_inspect":
        lines += ["The names most sessions use, as `import agent_inspect as ai; ai.NAME`. Each is documented once, "
                  "here; the subpackage that defines it links back.", ""]
        lines += ["::: agent_inspect", "    options:", "      members: false", "      show_root_heading: false", ""]
        for identifier in rendered:
            short = identifier.rsplit(".", 1)[-1]
            lines += [f"::: {identifier}", "    options:", "      show_root_full_path: false",
                      f"      heading: \"ai.{short}\"", "      show_root_toc_entry: true", ""]
    else:
        members = [i.rsplit(".", 1)[-1] for i in rendered]
        lines += [f"::: {package}", "    options:", "      show_root_heading: false",
                  f"      members: [{', '.join(members)}]" if members else "      members: false", ""]
    if elsewhere:
        lines += ["## Also exported here", "",
                  "The same objects as documented on another page, importable from this package too:", ""]
        lines += [f"- `{package}.{name}`: [`{target}`][{target}]" for name, target in elsewhere.items()]
        lines.append("")
    return "\n".join(lines)


def api_index(pages: dict[str, tuple[str, list[str], dict[str, str]]]) -> str:
    lines = ["# API reference", "",
             "Generated from the docstrings at build time: every name of `agent_inspect.__all__` and of each public "
             "subpackage's `__all__`, with its signature. Modules whose names start with `_` are private and are "
             "not documented; import from the packages below.", "",
             "Every example here runs as written in the test suite (`tests/docs/test_docs_examples.py`) and "
             "assumes only this, offline, from a checkout's root:", "",
             "```python", "import agent_inspect as ai", "log = ai.load(ai.samples.path(\"production\"))",
             "markers = ai.samples.markers(\"production\")", "```", "",
             "| Package | Public names | What it is |", "| --- | --- | --- |"]
    for package, (title, rendered, elsewhere) in pages.items():
        slug = package.replace("agent_inspect.", "") if package != "agent_inspect" else "agent_inspect"
        count = len(rendered) + len(elsewhere)
        lines.append(f"| [{title}]({slug}.md) | {count} | {_cell(_summary(package))} |")
    return "\n".join(lines) + "\n"


def _api_slug(package: str) -> str:
    return "agent_inspect" if package == "agent_inspect" else package.removeprefix("agent_inspect.")


# -- the command line -----------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}
    return {}


def _options_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        name = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.metavar or action.dest}`"
        if action.option_strings and action.nargs != 0:
            name += f" `{action.metavar or action.dest.upper()}`"
        text = action.help or ""
        if action.choices:
            text += f" (one of: {', '.join(map(str, action.choices))})"
        if action.default not in (None, False, argparse.SUPPRESS) and action.option_strings:
            text += f" Default: `{action.default}`."
        rows.append(f"| {name} | {_cell(text)} |")
    if not rows:
        return []
    return ["| Argument | What it does |", "| --- | --- |", *rows, ""]


def _command_section(parser: argparse.ArgumentParser, path: list[str], summary: str) -> list[str]:
    level = "#" * min(len(path) + 1, 4)
    anchor = "-".join(path)
    lines = [f"{level} agent-inspect {' '.join(path)} {{#{anchor}}}", ""]
    if summary:
        lines += [summary[0].upper() + summary[1:] + ("" if summary.endswith(".") else "."), ""]
    usage = parser.format_usage().removeprefix("usage: ").strip()
    lines += ["```text", " ".join(usage.split()), "```", ""]
    if parser.description and parser.description != summary:
        lines += [" ".join(parser.description.split()), ""]
    lines += _options_table(parser)
    for name, (sub, help_text) in _subparsers(parser).items():
        lines += _command_section(sub, [*path, name], help_text)
    return lines


def cli_markdown() -> str:
    from agent_inspect.cli import build_parser

    parser = build_parser()
    commands = _subparsers(parser)
    lines = ["# Command line", "",
             "Generated from the argparse parsers of `agent-inspect` at build time; `agent-inspect COMMAND --help` "
             "prints the same. Exit codes are on [their own page](exit-codes.md).", "",
             "| Command | What it does |", "| --- | --- |"]
    lines += [f"| [`{name}`](#{name}) | {_cell(help_text)} |" for name, (_, help_text) in commands.items()]
    lines.append("")
    for name, (sub, help_text) in commands.items():
        lines += _command_section(sub, [name], help_text)
    return "\n".join(lines) + "\n"


# -- the notebooks --------------------------------------------------------------------------------------


def _source_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted((REPO / "agent_inspect").rglob("*")):
        if path.suffix in (".py", ".js", ".css", ".json", ".toml") and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(REPO)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def executed_notebooks() -> dict[str, Path]:
    """notebook file name -> its executed copy in .docs-cache/ (run now if the notebook or the code changed)."""
    code = _source_digest()
    wanted: dict[str, Path] = {}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        key = hashlib.sha256(path.read_bytes() + code.encode()).hexdigest()[:16]
        wanted[path.name] = CACHE / "notebooks" / f"{path.stem}.{key}.ipynb"
    missing = [name for name, out in wanted.items() if not out.exists()]
    if missing:
        _execute(missing, wanted)
    return wanted


def _execute(names: list[str], outputs: dict[str, Path]) -> None:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    with tempfile.TemporaryDirectory(prefix="docs-notebooks-") as scratch:
        root = Path(scratch)
        shutil.copytree(NOTEBOOKS, root / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        for name in ("sample_logs", "cases"):
            (root / name).symlink_to(REPO / name, target_is_directory=True)
        os.environ.setdefault("IPYTHONDIR", str(root / ".ipython"))
        os.environ.setdefault("MPLCONFIGDIR", str(root / ".mpl"))
        for name in names:
            nb = nbformat.read(root / "notebooks" / name, as_version=4)
            client = NotebookClient(nb, kernel_name="python3", timeout=300,
                                    resources={"metadata": {"path": str(root / "notebooks")}})
            try:
                asyncio.run(client.async_execute())
            except CellExecutionError as exc:
                raise PluginError(f"notebook {name} failed while executing for the docs: {exc}") from exc
            out = outputs[name]
            out.parent.mkdir(parents=True, exist_ok=True)
            for old in out.parent.glob(f"{Path(name).stem}.*.ipynb"):
                old.unlink()
            nbformat.write(nb, out)


WIDGET = "application/vnd.jupyter.widget-view+json"


def static_widgets(executed: Path, target: Path) -> None:
    """Copy an executed notebook, each live view replaced by one line naming it (a widget needs a kernel)."""
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET in data:
                view = str(data.get("text/plain", "view")).split("(", 1)[0]
                output["data"] = {"text/plain": f"[{view}: an interactive view; run the notebook in JupyterLab "
                                                f"(agent-inspect demo) to use it]"}
    text = nbformat.writes(nb)
    if not target.exists() or target.read_text(encoding="utf-8") != text:
        target.write_text(text, encoding="utf-8")


def _notebook_title(path: Path) -> str:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


# -- the glossary (GLOSSARY HOOK) -----------------------------------------------------------------------


def glossary_markdown() -> str:
    lines = ["# Glossary", ""]
    try:
        from agent_inspect._glossary import GLOSSARY  # the words the views, reports and CLI print
    except ImportError:
        lines += ["The glossary of the words the views print is generated from `agent_inspect._glossary` when "
                  "the package has one; this build's package has none yet. The [concepts](../concepts/outcomes.md) "
                  "explain the main terms."]
        return "\n".join(lines) + "\n"
    lines += ["Every word a view, report or command line prints, with the one line its tooltip says. Generated "
              "from the package, so it always matches what you see.", "", "| Term | Meaning |", "| --- | --- |"]
    lines += [f"| `{_cell(term)}` | {_cell(text)} |" for term, text in GLOSSARY.items()]
    return "\n".join(lines) + "\n"


# -- the hooks ------------------------------------------------------------------------------------------


def _generated() -> dict[str, str]:
    pages = api_pages()
    out = {"reference/api/index.md": api_index(pages), "reference/cli.md": cli_markdown(),
           "reference/glossary.md": glossary_markdown(),
           "changelog.md": (REPO / "CHANGELOG.md").read_text(encoding="utf-8")}
    for package, (title, rendered, elsewhere) in pages.items():
        out[f"reference/api/{_api_slug(package)}.md"] = api_markdown(package, title, rendered, elsewhere)
    return out


def _find_section(nav: list[Any], title: str) -> list[Any]:
    for item in nav:
        if isinstance(item, dict) and title in item and isinstance(item[title], list):
            section: list[Any] = item[title]
            return section
    raise PluginError(f"mkdocs.yml: the nav has no section {title!r}")


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Put the generated API pages and the notebooks into the nav."""
    nav = config.nav
    reference = _find_section(nav, "Reference")
    for i, item in enumerate(reference):
        if isinstance(item, dict) and item.get("API") == "reference/api/index.md":
            reference[i] = {"API": ["reference/api/index.md",
                                    *({_api_slug(p): f"reference/api/{_api_slug(p)}.md"} for p in public_packages())]}
    for i, item in enumerate(nav):
        if isinstance(item, dict) and item.get("Notebooks") == "notebooks/index.md":
            nav[i] = {"Notebooks": ["notebooks/index.md",
                                    *({_notebook_title(p): f"notebooks/{p.name}"} for p in sorted(NOTEBOOKS.glob("*.ipynb")))]}
    return config


@event_priority(100)   # before mkdocs-jupyter's on_files, so it takes the notebooks added here
def on_files(files: Files, config: MkDocsConfig) -> Files:
    for src_uri, content in _generated().items():
        files.append(File.generated(config, src_uri, content=content))
    # the notebooks link the bundled case files as ../cases/X.toml (right beside them in a checkout); the site
    # serves them at the same relative place, so those links open the case file there too
    for case in sorted((REPO / "cases").glob("*.toml")):
        files.append(File.generated(config, f"notebooks/cases/{case.name}", content=case.read_text(encoding="utf-8")))
    # a real source directory (not File.generated): mkdocs-jupyter's wrapper reads abs_src_path from src_dir
    src = CACHE / "src"
    for name, executed in executed_notebooks().items():
        target = src / "notebooks" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        static_widgets(executed, target)
        files.append(File(f"notebooks/{name}", src_dir=str(src), dest_dir=config.site_dir,
                          use_directory_urls=config.use_directory_urls))
    return files
