"""The spatial distribution of the flows in a queue (docs/metrics.md), from queue snapshots.

A run made with ``simulation.queue_snapshots = true`` has a table ``queue_snapshots`` (the file
``queue_snapshots.csv``) with one row per waiting packet per snapshot:

=====================  ==========================================================================
column                 meaning
=====================  ==========================================================================
``time_s``             snapshot time (s); all rows of one snapshot share it (``t_s`` is
                       accepted as a synonym)
``position_from_tail`` 0 = the packet that arrived last (tail) ... n-1 = the head (next to send);
                       1-based numbering (1 = tail) is detected and accepted
``flow_id``            the packet's flow (as in flows.csv)
``transport``          ``udp`` or ``tcp``
=====================  ==========================================================================

``aqmlab run`` writes no rows for an empty queue and records the number of snapshots in
``summary.json`` (``queue_snapshots.count``); a hand-made file may instead mark an empty snapshot
by a row with only the time set. :func:`spatial_distribution` is what
:func:`aqmlab.spatial_distribution`, the models' comparisons and the ``queue`` figures compute.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..base.errors import RunDataError

SNAPSHOT_FILE = "queue_snapshots.csv"
SNAPSHOT_COLUMNS = ("time_s", "position_from_tail", "flow_id", "transport")


def spatial_distribution(
    snapshots: pd.DataFrame, n_grid: int = 200, source: str = SNAPSHOT_FILE, count: int | None = None
) -> pd.DataFrame:
    """The spatial distribution (docs/metrics.md): the fraction of snapshots whose packet at relative position ``y`` is UDP.

    With ``J`` snapshots of ``b^j`` packets and ``b_avg`` their mean, for ``y`` in ``[0, b_avg]``
    (0 = tail) snapshot j contributes 1 if its packet number ``floor(y b^j / b_avg)`` (clamped to
    ``b^j - 1``) counted from the tail is UDP; empty snapshots contribute 0. ``count`` is J when
    empty snapshots have no rows (as ``aqmlab run`` writes them: ``summary["queue_snapshots"]["count"]``).
    Returns columns ``y``, ``rho_udp``; ``attrs`` holds ``b_avg`` and ``snapshots`` (J).
    """
    if "t_s" in snapshots.columns and "time_s" not in snapshots.columns:
        snapshots = snapshots.rename(columns={"t_s": "time_s"})
    missing = set(SNAPSHOT_COLUMNS) - set(snapshots.columns)
    if missing:
        raise RunDataError(f"{source}: missing column(s) {', '.join(sorted(missing))}")
    if len(snapshots) == 0:
        raise RunDataError(f"{source}: no snapshots")
    df = snapshots.copy()
    if df["time_s"].isna().any():
        raise RunDataError(f"{source}: every row needs time_s")
    pos = pd.to_numeric(df["position_from_tail"], errors="coerce")
    bad = df["position_from_tail"].notna() & pos.isna()
    if bad.any():
        raise RunDataError(f"{source}: position_from_tail must be an integer (row {int(np.argmax(bad.to_numpy())) + 2})")
    df["pos"] = pos
    packets = df[df["pos"].notna()]
    times = np.sort(df["time_s"].unique())
    if len(packets):
        packets = packets.sort_values(["time_s", "pos"], kind="stable")
        is_udp = packets["transport"].astype(str).str.strip().str.lower().eq("udp").to_numpy()
        counts = packets.groupby("time_s", sort=True).size()
    else:
        is_udp = np.zeros(0, dtype=bool)
        counts = pd.Series(dtype=int)
    n_j = counts.reindex(times, fill_value=0).to_numpy()
    if count is not None:
        if count < len(times):
            raise RunDataError(f"{source}: {len(times)} snapshots in the file but a count of {count}")
        n_j = np.concatenate([n_j, np.zeros(count - len(times), dtype=n_j.dtype)])
    J = len(n_j)
    b_avg = float(n_j.mean())
    if b_avg <= 0:
        raise RunDataError(f"{source}: every snapshot is empty")
    offsets = np.concatenate([[0], np.cumsum(n_j)[:-1]])
    y = np.linspace(0.0, b_avg, int(n_grid))
    idx = np.floor(np.outer(n_j, y) / b_avg).astype(np.int64)  # J x G
    idx = np.minimum(idx, np.maximum(n_j - 1, 0)[:, None])
    flat = offsets[:, None] + idx
    hit = np.where(n_j[:, None] > 0, is_udp[np.minimum(flat, max(len(is_udp) - 1, 0))] if len(is_udp) else False, False)
    out = pd.DataFrame({"y": y, "rho_udp": hit.mean(axis=0)})
    out.attrs["b_avg"] = b_avg
    out.attrs["snapshots"] = J
    return out
