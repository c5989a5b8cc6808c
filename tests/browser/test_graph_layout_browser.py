"""The graph views' geometry as chromium draws it (issue 24 item 1): no label clipped by the figure, no two labels
on top of each other, no edge through a label or another node's marker; the folded whole-key graph keeps its edges
between groups.

Measures the drawn SVG (``getBoundingClientRect`` of every label, the edges trace mapped to the screen through
plotly's axes); timings are never asserted.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from test_core_views_browser import SETUP, _drawn, _light_and_dark, _notebook

pytestmark = pytest.mark.browser

BIG_ROUND = "graph = ai.widgets.GraphView(original, 'vip_0042', 0)\ngraph"
FOLDED = "folded = ai.widgets.GraphView(original, 'user-0004')\nfolded"
# One key, 30 rounds written by attempt 1, the last 10 run again by attempt 2 after a restore (the production
# executor writes both), its whole-key graph folded, with both attempts expanded: 39 round groups (a restore
# replays 9).
TALL = """
from agent_inspect.agents import ActionDecl, Behaviour, DeclarativeAgent, Emit
agent = DeclarativeAgent([ActionDecl("triage", ("_input_event",)), ActionDecl("reply", ("Triaged",))],
                         {"triage": [Behaviour((Emit("Triaged", {"topic": "orders"}),))],
                          "reply": [Behaviour((Emit("_output_event", {"output": "done"}),))]})
inputs = [("user-1", f"question {i}") for i in range(30)]
first = ai.ReplayExecutor(agent=agent, plan={"inputs": inputs}, num_partitions=1, seed=1)
first.run(until=lambda step: step.kind.value == "round-complete" and step.seq == 19)
first.checkpoint()
first.run()
second = ai.ReplayExecutor(first.to_log(), agent=agent, restore=first.checkpoints[-1], plan={"inputs": inputs[20:]},
                           rule="original", attempt=2, seed=2)
second.run()
rounds = ai.reconstruct(second.to_log(), markers=[first.checkpoints[-1].marker], agent=agent)
tall = ai.widgets.GraphView(rounds, "user-1")
for group in list(tall.shown.nodes):
    tall.expand(group)
tall
"""

# Every label's screen box (node labels and annotations: lane titles, edge words), the figure's box, and the
# edges as screen polylines.
_GEOMETRY_JS = """
(sel) => {
  const gd = document.querySelector(sel + ' .js-plotly-plot');
  const fl = gd._fullLayout, r = gd.getBoundingClientRect();
  const box = (e) => { const b = e.getBoundingClientRect();
                       return {left: b.left, right: b.right, top: b.top, bottom: b.bottom, text: e.textContent}; };
  const labels = Array.from(gd.querySelectorAll('.scatterlayer .textpoint text')).map(box)
                      .filter(b => b.text.trim());
  const notes = Array.from(gd.querySelectorAll('.annotation-text')).map(box);
  const edges = gd._fullData.find(t => t.name === 'edges');
  const lines = [];
  let current = [];
  for (let i = 0; i < edges.x.length; i++) {
    const x = edges.x[i], y = edges.y[i];
    if (x === null || Number.isNaN(x)) { if (current.length) lines.push(current); current = []; continue; }
    current.push([r.left + fl._size.l + fl.xaxis.l2p(x), r.top + fl._size.t + fl.yaxis.l2p(y)]);
  }
  if (current.length) lines.push(current);
  // every node's marker (and divergence ring), named by its trace and label
  const markers = [];
  gd.querySelectorAll('.scatterlayer .trace').forEach(el => {
    const name = el.__data__ && el.__data__[0] && el.__data__[0].trace.name;
    if (!name || name === 'edges') return;
    const texts = Array.from(el.querySelectorAll('.textpoint text')).map(t => t.textContent);
    Array.from(el.querySelectorAll('path.point')).forEach((p, i) => {
      const b = box(p);
      if (b.right > b.left) markers.push({...b, text: `${name}: ${texts[i] || i}`});
    });
  });
  const svg = gd.querySelector('.main-svg').getBoundingClientRect();
  return {labels, notes, lines, markers,
          figure: {left: svg.left, right: svg.right, top: svg.top, bottom: svg.bottom}};
}
"""


# A sub-agent call whose children ran in two attempts: attempt 1 died with CA2 unfinished, attempt 2 ran the
# call's children again (a case file, built to a log by the case builder).
TREE_TWO_ATTEMPTS = """
import tomllib
CASE = '''
id = "TREE-LANES"
replay = ["k:In(A)"]
log = [
  { att = 1, key = "k", seq = 5, action = "P", event = "In(A)#a1", status = "I" },
  { att = 1, key = "k", seq = 5, action = "CA1", event = "Sub(s0,s0-1,_input_event)#b1", status = "C", out = ["Sub(s0,s0-1,CE)#f1"] },
  { att = 1, key = "k", seq = 5, action = "CA2", event = "Sub(s0,s0-1,CE)#f1", status = "I" },
  { att = 2, key = "k", seq = 5, action = "P", event = "In(A)#a2", status = "I" },
  { att = 2, key = "k", seq = 5, action = "CA1", event = "Sub(s0,s0-1,_input_event)#b2", status = "C", out = ["Sub(s0,s0-1,CE)#f2"] },
  { att = 2, key = "k", seq = 5, action = "CA2", event = "Sub(s0,s0-1,CE)#f2", status = "C", out = ["Sub(s0,s0-1,_output_event)#o2"] },
]
[agent]
actions = [{ name = "P", triggers = ["_input_event"] }, { name = "CA1", triggers = ["_input_event"], scope = "child" },
           { name = "CA2", triggers = ["CE"], scope = "child" }]
[agent.on.P]
"*" = [{ subagent = "child", session = "s0", call_id = "s0-1" }]
[agent.on.CA1]
"*" = [{ emit = "Ev(CE)" }]
[agent.on.CA2]
"*" = [{ emit = "Ev(_output_event)" }]
'''
(case,) = ai.cases.parse_case(tomllib.loads(CASE))
built = ai.cases.build_case(case)
retried = ai.reconstruct(built.log, markers=list(built.markers), agent=built.agent, rule="original")
tree = ai.widgets.SubagentTreeView(retried, "k", 5)
tree
"""


def _overlap(a: dict, b: dict, slack: float = 1.0) -> bool:
    return (min(a["right"], b["right"]) - max(a["left"], b["left"]) > slack
            and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > slack)


def _crosses(line: list[list[float]], box: dict, slack: float = 1.0) -> bool:
    """Whether the polyline passes through ``box`` (sampled every pixel along each segment)."""
    for (x0, y0), (x1, y1) in zip(line, line[1:], strict=False):
        steps = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
        for i in range(steps + 1):
            x, y = x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps
            if box["left"] + slack < x < box["right"] - slack and box["top"] + slack < y < box["bottom"] - slack:
                return True
    return False


def _ends_at(line: list[list[float]], box: dict, slack: float = 6.0) -> bool:
    """Whether the polyline's arrowhead points at ``box`` (an edge stops just short of its target's marker)."""
    (x, y), cx, cy = line[-1], (box["left"] + box["right"]) / 2, (box["top"] + box["bottom"]) / 2
    return math.hypot(x - cx, y - cy) <= math.hypot(box["right"] - cx, box["bottom"] - cy) + slack


def _geometry_problems(geometry: dict) -> list[str]:
    fig, labels, notes = geometry["figure"], geometry["labels"], geometry["notes"]
    problems = [f"clipped: {b['text']!r}" for b in labels + notes
                if b["left"] < fig["left"] - 0.5 or b["right"] > fig["right"] + 0.5
                or b["top"] < fig["top"] - 0.5 or b["bottom"] > fig["bottom"] + 0.5]
    boxes = labels + [n for n in notes if "attempt" in n["text"]]      # node labels and lane titles
    problems += [f"overlap: {a['text']!r} / {b['text']!r}" for i, a in enumerate(boxes) for b in boxes[i + 1:]
                 if _overlap(a, b)]
    problems += [f"edge {k} through {b['text']!r}" for k, line in enumerate(geometry["lines"]) for b in boxes
                 if _crosses(line, b)]
    # the words of a folded graph's edges ("then", "re-runs"): on no label, crossed by no edge (before: a word
    # halfway between two nodes sat on the tall label of a divergence node, and the word of the first of two
    # edges climbing one gutter lay across the second)
    words = [n for n in notes if "attempt" not in n["text"]]
    problems += [f"word {w['text']!r} on {b['text']!r}" for w in words for b in boxes if _overlap(w, b)]
    problems += [f"edge {k} through the word {w['text']!r}" for k, line in enumerate(geometry["lines"])
                 for w in words if _crosses(line, w)]
    # no edge across another node's marker (before: an edge from the previous band of a wrapped graph entered
    # its target along the target's row, through the markers of the lanes on its way)
    problems += [f"edge {k} through the marker of {m['text']!r}" for k, line in enumerate(geometry["lines"])
                 for m in geometry["markers"] if not _ends_at(line, m) and _crosses(line, m)]
    return problems


def _graph_of(lab_page, lab_root: Path, name: str, cell: str, trace: str, sel: str = ".ai-graph"
              ) -> tuple[object, dict, list[dict]]:
    """Run SETUP and ``cell`` in a new notebook; the page, the graph's measured geometry, and its traces once
    ``trace`` is drawn."""
    lab_page.open(_notebook(lab_root, name, [SETUP, cell]))
    lab_page.run_all()
    page = lab_page.page
    traces = _drawn(page, sel, trace)
    page.locator(sel).first.scroll_into_view_if_needed()
    return page, page.evaluate(_GEOMETRY_JS, sel), traces


def _photographed(lab_page, stem: str, artifacts: Path, sel: str = ".ai-graph") -> None:
    _light_and_dark(lab_page.page, {sel: stem}, artifacts)
    assert lab_page.dialogs == [] and lab_page.xss_hits() == []


def test_a_big_round_has_no_clipped_label_and_no_edge_through_one(lab_page, lab_root: Path, artifacts: Path) -> None:
    page, geometry, _ = _graph_of(lab_page, lab_root, "graph-layout.ipynb", BIG_ROUND, "edges")
    (artifacts / "graph-vip_0042-seq-0-geometry.json").write_text(json.dumps(geometry, indent=1))
    assert len(geometry["labels"]) == 29 and len(geometry["lines"]) == 27
    assert _geometry_problems(geometry) == []
    title = page.locator(".ai-graph .ai-title").first.inner_text()
    assert "vip_0042" in title and "seq 0" in title and "attempts 1, 2" in title
    lanes = [n["text"] for n in geometry["notes"]]
    assert "attempt 1" in lanes and "attempt 2" in lanes
    _photographed(lab_page, "graph-vip_0042-seq-0", artifacts)


def test_the_folded_graph_draws_its_edges_between_groups(lab_page, lab_root: Path, artifacts: Path) -> None:
    _, geometry, traces = _graph_of(lab_page, lab_root, "graph-folded.ipynb", FOLDED, "divergence point")
    ring = next(t for t in traces if t["name"] == "divergence point")
    assert ring["n"] == 1                                   # the attempt-2 group holds the divergence
    assert len(geometry["lines"]) == 1                      # attempt 1 → attempt 2
    assert any("re-runs" in n["text"] for n in geometry["notes"])
    texts = " ".join(b["text"] for b in geometry["labels"])
    assert "✕ 1 divergence" in texts and "27 removed" in texts
    assert _geometry_problems(geometry) == []
    _photographed(lab_page, "graph-user-0004-folded", artifacts)


def test_a_folded_chain_of_30_rounds_wraps_into_bands_a_notebook_can_read(lab_page, lab_root: Path,
                                                                       artifacts: Path) -> None:
    """Before: one column of 31 layers, 2,309 px tall. Wrapped: bands of rounds side by side, every band with
    its attempt lanes titled, edges to the next band in the gutter between them."""
    page, geometry, _ = _graph_of(lab_page, lab_root, "graph-tall.ipynb", TALL, "edges")
    (artifacts / "graph-30-rounds-geometry.json").write_text(json.dumps(geometry, indent=1))
    height = geometry["figure"]["bottom"] - geometry["figure"]["top"]
    assert height < 1100, height
    assert len(geometry["labels"]) == 39 and len(geometry["lines"]) == 46      # 30 + 9 rounds; next, re-runs
    assert len(geometry["markers"]) == 40                 # the 39 rounds' and the divergence's ring
    assert _geometry_problems(geometry) == []
    lanes = [n["text"] for n in geometry["notes"] if n["text"].startswith("attempt")]
    assert lanes.count("attempt 1") >= 2 and lanes.count("attempt 2") >= 2        # every band titles its lanes
    assert sum("re-runs" in n["text"] for n in geometry["notes"]) == 9              # the group edges keep their words
    # the toolbar keeps its widths beside a long title (before: "collapse all" was squeezed to "colla…")
    button = page.locator(".ai-graph button", has_text="collapse all").first
    assert button.is_visible()
    assert button.evaluate("b => b.scrollWidth <= b.clientWidth + 1 && b.getBoundingClientRect().width >= 100")
    _photographed(lab_page, "graph-30-rounds-wrapped", artifacts)


def test_the_sub_agent_tree_draws_each_attempts_children_in_a_titled_lane(lab_page, lab_root: Path,
                                                                        artifacts: Path) -> None:
    """Before: one tree, the children of both attempts side by side under one call, no lane and no title."""
    sel = ".ai-subagent-tree"
    _, geometry, _ = _graph_of(lab_page, lab_root, "tree-lanes.ipynb", TREE_TWO_ATTEMPTS, "edges", sel)
    (artifacts / "tree-two-attempts-geometry.json").write_text(json.dumps(geometry, indent=1))
    titles = {n["text"]: (n["left"] + n["right"]) / 2 for n in geometry["notes"] if n["text"].startswith("attempt")}
    assert set(titles) == {"attempt 1", "attempt 2"} and titles["attempt 1"] < titles["attempt 2"]
    centre = [(b["text"], (b["left"] + b["right"]) / 2) for b in geometry["labels"]]
    first = [x for text, x in centre if "CA" in text and "superseded" in text]     # attempt 1's children
    second = [x for text, x in centre if "CA" in text and "REUSED" in text]        # attempt 2's, reused
    assert len(first) == 2 and len(second) == 2, centre
    middle = (titles["attempt 1"] + titles["attempt 2"]) / 2
    assert max(first) < middle < min(second)                    # each attempt's children under its own title
    assert sum(text.startswith("call 1") for text, _ in centre) == 2   # each lane a whole tree: its own call node
    assert _geometry_problems(geometry) == []
    _photographed(lab_page, "tree-two-attempts-lanes", artifacts, sel)
