"""``SearchReport.plot(path)``: one search's candidates drawn as measured time against the cost
model's estimate (the calibrated seconds of cost.py where the report has them, else the
static cost's units), the spread of each measurement as an error bar, the winner marked.
Needs matplotlib (the ``plot`` extra). Not the report's text (search.SearchReport.__str__).
"""

from __future__ import annotations

from ..errors import LuminalError


def plot_report(report, path) -> None:
    """Writes the figure of ``report``'s timed candidates to ``path`` (PNG, SVG or PDF, by
    its suffix)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise LuminalError("SearchReport.plot needs matplotlib: pip install "
                           "'luminal[plot]'") from e
    timed = [(i, c) for i, c in enumerate(report.candidates) if c.seconds is not None]
    if not timed:
        why = "it was a cache hit" if report.cache_hit else "no candidate was timed"
        raise LuminalError(f"SearchReport.plot: nothing to draw ({why}; budget "
                           f"{report.budget})")
    calibrated = all(c.estimate is not None for _, c in timed)
    xs = [c.estimate * 1e3 if calibrated else c.cost for _, c in timed]
    ys = [c.seconds * 1e3 for _, c in timed]
    errs = [(c.spread or 0.0) * 1e3 / 2 for _, c in timed]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.errorbar(xs, ys, yerr=errs, fmt="o", ms=4, capsize=2, label="candidate")
    for (i, c), x, y in zip(timed, xs, ys):
        if i == report.winner:
            ax.plot([x], [y], "r*", ms=14, label=f"winner (program {c.rank})")
    if calibrated:
        lo, hi = min(xs + ys), max(xs + ys)
        ax.plot([lo, hi], [lo, hi], "k:", lw=1, label="estimate = measured")
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("cost model estimate, ms" if calibrated else "static cost (model units)")
    ax.set_ylabel("measured, ms")
    rho = f", Spearman {report.rank_correlation:.2f}" if report.rank_correlation is not None \
        else ""
    ax.set_title(f"search on {report.runtime}, budget {report.budget}: {len(timed)} timed"
                 f"{rho}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(str(path))
    plt.close(fig)
