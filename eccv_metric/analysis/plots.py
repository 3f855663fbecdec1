"""Plots (matplotlib is an optional extra: pip install 'eccv-caption-hf[plot]')."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import atomic_open


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or one error line saying how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise EvaluationError(
            f"the heatmap needs matplotlib, which cannot be imported ({type(exc).__name__}: {str(exc)[:120]}): "
            "pip install matplotlib (the package's [plot] extra)"
        ) from None
    return plt


def tau_heatmap(taus: dict[str, dict[str, float]], path: str | Path) -> Path:
    """Heatmap PNG of a metric x metric Kendall tau-b matrix."""
    plt = pyplot()
    names = list(taus)
    values = [[taus[a][b] for b in names] for a in names]
    fig, ax = plt.subplots(figsize=(1 + 0.7 * len(names), 1 + 0.6 * len(names)))
    image = ax.imshow(values, vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right")
    ax.set_yticks(range(len(names)), names)
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color="white" if abs(v) > 0.6 else "black")
    fig.colorbar(image, ax=ax, label="Kendall tau-b")
    ax.set_title("Rank correlation between metrics")
    fig.tight_layout()
    with atomic_open(path, "wb", encoding=None) as out:  # never a half-written PNG
        fig.savefig(out, format="png", dpi=120)
    plt.close(fig)
    return Path(path)
