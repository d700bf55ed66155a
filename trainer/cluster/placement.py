"""Where a run's Ray processes ran: role -> node (id, ip, custom resources) -> pid.

Printed once the workers are up and written to ``<turngym.output_dir>/placement.json``, so an operator
can see which node hosted which actor worker, rollout replica and agent-loop worker (and find its log
under that node's Ray session folder by pid).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import ray

# Resources every Ray node has; anything else on a node is an operator's own label (node_a, ...).
STANDARD_RESOURCES = ("CPU", "GPU", "memory", "object_store_memory")


def _where() -> tuple[str, int]:
    return ray.get_runtime_context().get_node_id(), os.getpid()


def node_labels() -> dict[str, dict[str, Any]]:
    """``{node_id: {"ip": ..., "resources": [custom resource names]}}`` for the cluster's live nodes."""
    out = {}
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        custom = sorted(
            name
            for name in node.get("Resources", {})
            if name not in STANDARD_RESOURCES and not name.startswith(("node:", "accelerator_type:"))
        )
        out[node["NodeID"]] = {"ip": node.get("NodeManagerAddress", "?"), "resources": custom}
    return out


def placement_rows(roles: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """One row per role: ``{"role", "node_id", "ip", "resources", "pid"}``.

    Args:
        roles: ``(role name, actor handle)`` pairs; a handle of None means this very process.

    Returns:
        The rows, in the order given.
    """
    nodes = node_labels()
    # Asked of each actor itself: ``__ray_call__`` runs the function in the actor's own process.
    refs = [
        None if handle is None else handle.__ray_call__.remote(lambda self: _where()) for _, handle in roles
    ]
    rows = []
    for (role, _), ref in zip(roles, refs, strict=True):
        node_id, pid = _where() if ref is None else ray.get(ref)
        node = nodes.get(node_id, {"ip": "?", "resources": []})
        rows.append(
            {"role": role, "node_id": node_id, "ip": node["ip"], "resources": node["resources"], "pid": pid}
        )
    return rows


def placement_table(rows: list[dict[str, Any]]) -> str:
    """The rows as an aligned text table (node ids shortened to 12 characters, as Ray's CLI shows them)."""
    header = ("role", "node", "ip", "resources", "pid")
    lines = [
        (r["role"], r["node_id"][:12], r["ip"], ",".join(r["resources"]) or "-", str(r["pid"])) for r in rows
    ]
    widths = [max(len(x[i]) for x in [header, *lines]) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(x, widths, strict=True)).rstrip() for x in [header, *lines]
    )


def write_placement(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Write the rows as JSON (a list of objects) to ``path``; return it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=1) + "\n")
    return path
