"""Figures of gap studies ([GAP] Fig. 1 style) with matplotlib (Agg backend, files only)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rulemip.certify.theory import theorem1_bound


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def set_k_ticks(ax: Any, ks: Any) -> None:
    """Integer ticks only on an axis of rule counts ``ks`` — also for a single k, where
    an integer locator that finds fewer than two integers in view falls back to
    fractional ticks (0.96, 0.98, …): up to 12 counts get one tick each, more get an
    integer locator that accepts a single tick."""
    from matplotlib.ticker import MaxNLocator

    values = sorted({int(k) for k in np.asarray(ks).ravel().tolist()})
    if 0 < len(values) <= 12:
        ax.set_xticks(values)
        if len(values) == 1:
            ax.set_xlim(values[0] - 0.5, values[0] + 0.5)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def plot_risk_vs_k(table: Any, path: str | Path, title: str = "") -> Path:
    """Training risk against k per boosting variant, with the exact incumbent and the
    certified band [lower bound, incumbent]."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    exact = table.drop_duplicates("k").sort_values("k")
    ks = exact["k"].to_numpy()
    ax.fill_between(ks, exact["bound"].to_numpy(), exact["incumbent"].to_numpy(),
                    color="0.8", label="certified optimum lies here", step=None)
    ax.plot(ks, exact["incumbent"], "k-", lw=2, label="exact incumbent")
    for variant, grp in table.groupby("variant", sort=False):
        g = grp.sort_values("k")
        ax.plot(g["k"], g["risk_boost"], marker="o", ms=3, lw=1, label=str(variant))
    set_k_ticks(ax, ks)
    ax.set_xlabel("number of rules k")
    ax.set_ylabel("training risk")
    ax.set_title(title or "boosting vs certified optimum")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def plot_gap_cdf(gaps: Sequence[float], ks: Sequence[int], path: str | Path,
                 label: str = "certified gaps", title: str = "") -> Path:
    """Cumulative distribution of normalized gaps ``diff_max / R(f_∅)`` over datasets,
    against Theorem 1's worst-case line :math:`1/2 - 1/(4k^*-2)` ([GAP] Fig. 1)."""
    plt = _pyplot()
    g = np.sort(np.asarray(gaps, dtype=float))
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    if len(g):
        ax.step(g, np.arange(1, len(g) + 1) / len(g), where="post", lw=2, label=label)
    bounds = sorted({theorem1_bound(int(k)) for k in ks if int(k) >= 1})
    for b in bounds:
        ax.axvline(b, color="r", ls="--", lw=1)
    if bounds:
        ax.plot([], [], "r--", label="Theorem 1: 1/2 - 1/(4k*-2)")
        ax.axvline(0.1 * min(b for b in bounds if b > 0) if any(b > 0 for b in bounds) else 0,
                   color="0.5", ls=":", lw=1, label="same magnitude (1/10 of bound)")
    ax.set_xscale("symlog", linthresh=1e-3)
    ax.set_xlabel("normalized approximation gap")
    ax.set_ylabel("fraction of datasets")
    ax.set_ylim(0, 1.02)
    ax.set_title(title or "boosting's certified gaps vs the worst case")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
