"""Start-up stays cheap: heavy libraries are imported only by what needs them (issue #16, item 9).

Each check runs in a fresh interpreter, the way a new kernel starts; timings are measured in
benchmarks, never asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
SAMPLE = ROOT / "sample_logs" / "production.jsonl"
#: Libraries that neither ``import agent_inspect`` nor loading a dump file may import.
HEAVY = ("plotly", "networkx", "dask", "distributed", "ipywidgets", "anywidget", "jupyter_client", "nbformat",
         "jsonschema", "confluent_kafka", "IPython")


def _modules_after(code: str) -> dict[str, list[str]]:
    """Run ``code`` in a fresh interpreter; it sets ``stages`` (name → None); return each stage's heavy modules."""
    script = f"""
import json, sys
HEAVY = {HEAVY!r}
out = {{}}
def stage(name):
    out[name] = sorted(h for h in HEAVY if h in sys.modules)
{code}
print(json.dumps(out))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_import_and_first_load_leave_the_heavy_libraries_out() -> None:
    stages = _modules_after(f"""
import agent_inspect as ai
stage("import")
log = ai.load({str(SAMPLE)!r})
assert len(log.records) > 0
stage("load")
""")
    assert stages == {"import": [], "load": []}


def test_public_names_stay_listed_and_resolve_lazily() -> None:
    stages = _modules_after("""
import agent_inspect as ai
assert dir(ai) == sorted(ai.__all__), dir(ai)
stage("dir")
for name in ai.__all__:
    getattr(ai, name)
stage("all")
""")
    assert stages["dir"] == []
    assert "networkx" in stages["all"]  # resolving every name imports the views and the graph model


def test_the_first_log_browser_imports_only_its_own_view() -> None:
    stages = _modules_after(f"""
import sys
import agent_inspect as ai
log = ai.load({str(SAMPLE)!r})
ai.inspect(log)
stage("inspect")
views = sorted(m for m in sys.modules if m.startswith("agent_inspect.widgets._"))
print(json.dumps(views), file=sys.stderr)
assert "agent_inspect.widgets._graph" not in views, views
assert "agent_inspect.widgets._scan" not in views, views
assert "agent_inspect.diffing" not in sys.modules
assert "agent_inspect.fleet" not in sys.modules
""")
    assert "ipywidgets" in stages["inspect"]
    assert "networkx" not in stages["inspect"]
    assert "dask" not in stages["inspect"]
    assert "distributed" not in stages["inspect"]


def test_the_widgets_package_lists_every_view() -> None:
    stages = _modules_after("""
import agent_inspect.widgets as views
assert sorted(views.__all__) == sorted(set(views.__all__))
for name in views.__all__:
    value = getattr(views, name)
    assert getattr(value, "__name__", name) == name, name   # views and functions by their own name; PALETTE is data
assert set(views.__all__) <= set(dir(views))
stage("views")
""")
    assert "networkx" in stages["views"]
