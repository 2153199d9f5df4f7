"""Matplotlib helpers shared by the command line, the demo and trajectory plots.

matplotlib is imported only when a plot is drawn (it costs ~0.3 s), and always with
the non-interactive Agg backend, so plotting works on a headless machine and never
opens a window.

>>> from kinedyn import plotting
>>> plotting.plot_panels("qpos.png", t, [plotting.Panel("joint angles", qpos, labels, "rad")])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np


def pyplot():
    """matplotlib.pyplot on the Agg backend (file output only)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@dataclass(frozen=True)
class Panel:
    """One subplot: ``values`` (n,) or (n, k) against time, one line per column.

    ``dashed`` are optional reference lines drawn in the same colours (e.g. the commanded
    motion under the simulated one); ``labels`` name the columns (legend when ≤ 12).
    """

    title: str
    values: np.ndarray
    labels: Sequence[str] = ()
    ylabel: str = ""
    dashed: np.ndarray | None = None


def panels_figure(t, panels: Sequence[Panel], title: str = "", xlabel: str = "time (s)"):
    """A matplotlib figure with ``panels`` stacked vertically over a shared time axis (not saved).

    For callers that want to adjust the figure before saving it with :func:`save_figure`;
    :func:`plot_panels` does both.
    """
    plt = pyplot()
    t = np.asarray(t, dtype=float)
    fig, axes = plt.subplots(len(panels), 1, sharex=True, squeeze=False,
                             figsize=(9.0, 2.6 * len(panels) + 0.6))
    for ax, panel in zip(axes[:, 0], panels, strict=True):
        values = np.asarray(panel.values, dtype=float).reshape(len(t), -1)
        labels = list(panel.labels) or [None] * values.shape[1]
        lines = ax.plot(t, values, linewidth=1.2)
        for line, label in zip(lines, labels, strict=True):
            line.set_label(label)
        if panel.dashed is not None:
            dashed = np.asarray(panel.dashed, dtype=float).reshape(len(t), -1)
            for line, column in zip(lines, dashed.T, strict=True):
                ax.plot(t, column, linestyle="--", linewidth=0.9, color=line.get_color())
        ax.set_title(panel.title, fontsize=10)
        ax.set_ylabel(panel.ylabel)
        ax.grid(True, alpha=0.3)
        if panel.labels and len(labels) <= 12:
            ax.legend(fontsize=7, ncol=min(len(labels), 6), loc="upper right")
    axes[-1, 0].set_xlabel(xlabel)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def save_figure(fig, path: str | Path) -> Path:
    """Save ``fig`` as a PNG at ``path``, close it (frees its memory) and return the path."""
    path = Path(path)
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return path


def plot_panels(path: str | Path, t, panels: Sequence[Panel], title: str = "",
                xlabel: str = "time (s)") -> Path:
    """Stack ``panels`` vertically over a shared time axis and save a PNG; returns the path."""
    return save_figure(panels_figure(t, panels, title, xlabel), path)


__all__ = ["Panel", "panels_figure", "plot_panels", "pyplot", "save_figure"]
