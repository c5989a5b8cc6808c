"""What the log shows, per business key: executions, attempts, rounds, lineage, action graphs, call trees.

Pure functions over an ``ActionStateLog`` (or its ``records`` frame, e.g. one partition's rows).
"""

from __future__ import annotations

from agent_inspect.history._compact import (
    REMOVED_STATUSES,
    SearchIndex,
    compact_history,
    matching_positions,
    record_kinds,
)
from agent_inspect.history._executions import (
    ATTEMPT_REASONS,
    History,
    annotate,
    annotate_rows,
    attempts,
    build_history,
    executions,
    lineage,
    rounds,
)
from agent_inspect.history._graph import EVICTED_STATUSES, NOT_IN_LOG, action_graph, graph_edges, graph_nodes
from agent_inspect.history._groups import (
    GROUP_EDGE_KINDS,
    MAX_CHILDREN,
    attempt_group,
    graph_groups,
    group_graph,
    range_group,
    round_group,
)
from agent_inspect.history._layout import LayeredDrawing, layered_drawing, layered_layout, wrapped_drawing
from agent_inspect.history._names import action_label, action_names, is_uuid
from agent_inspect.history._refresh import (
    KAFKA_PENDING,
    refresh_rows,
    repeated_values,
    source_kind_of,
    writes_refresh_rows,
)
from agent_inspect.history._results import subagent_result_events
from agent_inspect.history._subagent import ATTRIBUTIONS, CALL_STATUSES, subagent_tree, tree_lanes

__all__ = [
    # executions, attempts, rounds, lineage
    "History", "build_history", "annotate", "annotate_rows", "executions", "attempts", "rounds", "lineage", "ATTEMPT_REASONS",
    # action graphs and sub-agent call trees
    "action_graph", "subagent_tree", "graph_nodes", "graph_edges", "layered_layout", "layered_drawing", "LayeredDrawing",
    "wrapped_drawing", "tree_lanes",
    "NOT_IN_LOG", "EVICTED_STATUSES", "CALL_STATUSES", "ATTRIBUTIONS",
    # level of detail: graphs folded into attempt and round groups
    "group_graph", "graph_groups", "GROUP_EDGE_KINDS", "attempt_group", "range_group", "round_group", "MAX_CHILDREN",
    # the compact per-key history (one line per execution) and its search
    "compact_history", "record_kinds", "matching_positions", "SearchIndex", "REMOVED_STATUSES",
    # checkpoint-time refresh rows (0.4+), which the history reads the log without
    "refresh_rows", "repeated_values", "writes_refresh_rows", "source_kind_of", "KAFKA_PENDING",
    # V4 sub-agent result events of a record
    "subagent_result_events",
    # action names for UUIDs (what every view shows)
    "action_names", "action_label", "is_uuid",
]
