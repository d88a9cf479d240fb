"""A grouped bar chart as a PNG: speedup over eager per model, one bar per contender,
one panel per dtype, drawn with matplotlib (`pip install -e '.[bench]'`).

    write_chart("suite.png", panels, "title")          # MissingMatplotlib without it
    print(chart_step("suite.png", panels, "title"))    # without it: how to install it

A panel is (title, models, {contender: [speedup or None for each model]}); None is a
contender that failed (drawn as a red x on the axis). The PNG also carries the title
and every bar's value as text (its Title and Description metadata), so a script can
read the chart's data back without the image.
"""

from __future__ import annotations

import math

Panel = tuple[str, list[str], dict[str, list[float | None]]]

COLORS = {"eager": (150, 150, 150), "inductor": (31, 119, 180), "strata": (255, 127, 14)}
_OTHER = (44, 160, 44)
INSTALL = "pip install -e '.[bench]'"


class MissingMatplotlib(ImportError):
    pass


def write_chart(path: str, panels: list[Panel], title: str = "") -> None:
    """Writes the chart to path (PNG)."""
    plt = _pyplot()
    width = max(6.0, 1.0 + 0.9 * max(len(p[1]) for p in panels))
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, 3.4 * len(panels)), squeeze=False)
    for ax, panel in zip(axes[:, 0], panels):
        name, models, series = panel
        n = len(series)
        bar = 0.8 / n
        for k, (contender, values) in enumerate(series.items()):
            xs = [i - 0.4 + bar * (k + 0.5) for i in range(len(models))]
            heights = [v if v is not None else 0.0 for v in values]
            bars = ax.bar(xs, heights, bar, label=contender, color=[c / 255 for c in COLORS.get(contender, _OTHER)])
            for x, v, b in zip(xs, values, bars):
                if v is None:
                    ax.plot([x], [_range(panel)[0] * 1.1], marker="x", color="red", markersize=8)
                elif contender != "eager":
                    ax.annotate(f"{v:.2f}", (x, b.get_height()), ha="center", va="bottom", fontsize=7)
        if any(v is None for vs in series.values() for v in vs):
            ax.plot([], [], "x", color="red", label="failed")
        ax.axhline(1.0, color="black", linewidth=0.6, linestyle="--")
        ax.set_xticks(range(len(models)), models, fontsize=8)
        lo, hi = _range(panel)
        ax.set_yscale("log", base=2)
        ax.set_ylim(lo, hi)
        ax.set_yticks(_ticks(lo, hi), [f"{t:g}" for t in _ticks(lo, hi)])
        ax.minorticks_off()
        ax.set_ylabel("speedup over eager (log)")
        ax.set_title(name, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Title": title or "speedup over eager", "Description": describe(panels)})
    plt.close(fig)


def chart_step(path: str, panels: list[Panel], title: str = "") -> str:
    """Writes the chart if matplotlib is there; returns the line to print either way."""
    try:
        write_chart(path, panels, title)
    except MissingMatplotlib as e:
        return f"chart: {path} not written: {e}"
    return f"chart: {path}"


def available() -> bool:
    """Whether write_chart can draw here."""
    try:
        _pyplot()
    except MissingMatplotlib:
        return False
    return True


def describe(panels: list[Panel]) -> str:
    """Every bar as text: `panel: model eager=1.00/inductor=failed/strata=0.40, ...; ...`."""
    return "; ".join(f"{p[0]}: " + ", ".join(
        f"{m} " + "/".join(f"{k}={'failed' if s[i] is None else format(s[i], '.2f')}" for k, s in p[2].items())
        for i, m in enumerate(p[1])) for p in panels)


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise MissingMatplotlib(f"charts need matplotlib ({e}); install it with {INSTALL}") from None
    return plt


def _range(panel: Panel) -> tuple[float, float]:
    """The y axis (log scale) from a power of 2 below every value and 1 to one above."""
    values = [v for vs in panel[2].values() for v in vs if v is not None and math.isfinite(v) and v > 0]
    lo, hi = min([1.0, *values]), max([1.0, *values])
    return 2.0 ** math.floor(math.log2(lo) - 0.3), 2.0 ** math.ceil(math.log2(hi) + 0.3)


def _ticks(lo: float, hi: float) -> list[float]:
    """Powers of 2 from lo to hi, every second or fourth one when there are many."""
    n = round(math.log2(hi / lo))
    step = 1 if n <= 8 else 2 if n <= 16 else 4
    return [lo * 2.0**i for i in range(0, n + 1, step)]
