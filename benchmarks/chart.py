"""A grouped bar chart as a PNG: speedup over eager per model, one bar per contender,
one panel per dtype.

    write_chart("suite.png", panels)                       # matplotlib if importable
    write_chart("suite.png", panels, backend="builtin")    # zlib + struct only

A panel is (title, models, {contender: [speedup or None for each model]}); None is a
contender that failed (drawn as a red x on the axis). The built-in writer draws with a
5x7 bitmap font (upper case, digits and a few signs), so it needs nothing beyond the
standard library; it also stores the title and the legend as PNG tEXt chunks.
"""

from __future__ import annotations

import math
import struct
import zlib

Panel = tuple[str, list[str], dict[str, list[float | None]]]

COLORS = {"eager": (150, 150, 150), "inductor": (31, 119, 180), "strata": (255, 127, 14)}
_OTHER = (44, 160, 44)


def write_chart(path: str, panels: list[Panel], title: str = "", backend: str = "auto") -> str:
    """Writes the chart; returns the backend used ("matplotlib" or "builtin")."""
    if backend in ("auto", "matplotlib"):
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot  # noqa: F401
        except Exception:
            if backend == "matplotlib":
                raise
        else:
            _matplotlib_chart(path, panels, title)
            return "matplotlib"
    _builtin_chart(path, panels, title)
    return "builtin"


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


# ---------------------------------------------------------------- matplotlib
def _matplotlib_chart(path: str, panels: list[Panel], title: str) -> None:
    import matplotlib.pyplot as plt

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
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- built-in PNG writer
# 5x7 glyphs, one byte a row (bit 4 is the leftmost pixel).
_FONT = {
    " ": "00000000000000", "0": "0E11131519110E", "1": "040C040404040E", "2": "0E11010204081F",
    "3": "1F02040201110E", "4": "02060A121F0202", "5": "1F101E0101110E", "6": "0608101E11110E",
    "7": "1F010204080808", "8": "0E11110E11110E", "9": "0E11110F01020C", "A": "0E1111111F1111",
    "B": "1E11111E11111E", "C": "0E11101010110E", "D": "1C12111111121C", "E": "1F10101E10101F",
    "F": "1F10101E101010", "G": "0E11101711110F", "H": "1111111F111111", "I": "0E04040404040E",
    "J": "0702020202120C", "K": "11121418141211", "L": "1010101010101F", "M": "111B1515111111",
    "N": "11111915131111", "O": "0E11111111110E", "P": "1E11111E101010", "Q": "0E11111115120D",
    "R": "1E11111E141211", "S": "0F10100E01011E", "T": "1F040404040404", "U": "1111111111110E",
    "V": "11111111110A04", "W": "1111111515150A", "X": "11110A040A1111", "Y": "11110A04040404",
    "Z": "1F01020408101F", ".": "00000000000C0C", ",": "000000000C0408",
    "-": "0000001F000000", "_": "0000000000001F", ":": "000C0C000C0C00", "/": "00010204081000",
    "(": "02040808080402", ")": "08040202020408", "%": "18190204081303", "x": "0000110A040A11",
    "=": "00001F001F0000", "+": "0004041F040400", "<": "02040810080402", ">": "08040201020408",
    "?": "0E110102040004", "'": "04040800000000", "*": "0004150E150400",
}
_GLYPHS = {ch: [int(rows[i:i + 2], 16) for i in range(0, 14, 2)] for ch, rows in _FONT.items()}


class _Canvas:
    def __init__(self, width: int, height: int, background=(255, 255, 255)):
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def rect(self, x0: int, y0: int, x1: int, y1: int, color) -> None:
        """Fills [x0, x1) x [y0, y1), clipped to the canvas."""
        x0, x1 = max(0, min(x0, x1)), min(self.width, max(x0, x1))
        y0, y1 = max(0, min(y0, y1)), min(self.height, max(y0, y1))
        if x0 >= x1:
            return
        line = bytes(color) * (x1 - x0)
        for y in range(y0, y1):
            start = 3 * (y * self.width + x0)
            self.pixels[start:start + len(line)] = line

    def text(self, x: int, y: int, s: str, color=(0, 0, 0), scale: int = 1, anchor: str = "left") -> None:
        """Draws s with its top at y; anchor left, center or right of x."""
        width = self.text_width(s, scale)
        if anchor == "center":
            x -= width // 2
        elif anchor == "right":
            x -= width
        for i, ch in enumerate(s):
            # Upper case, but a lone x (a "1.23x", a failure mark) stays small.
            lone = ch == "x" and not (s[i - 1:i].isalpha() or s[i + 1:i + 2].isalpha())
            glyph = _GLYPHS.get(ch if lone else ch.upper()) or _GLYPHS["?"]
            for row, bits in enumerate(glyph):
                for col in range(5):
                    if bits & (0x10 >> col):
                        self.rect(x + col * scale, y + row * scale, x + (col + 1) * scale, y + (row + 1) * scale, color)
            x += 6 * scale

    @staticmethod
    def text_width(s: str, scale: int = 1) -> int:
        return max(0, 6 * len(s) - 1) * scale

    def png(self, text: dict[str, str]) -> bytes:
        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        stride = 3 * self.width
        raw = b"".join(b"\x00" + bytes(self.pixels[y * stride:(y + 1) * stride]) for y in range(self.height))
        out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0))
        for key, value in text.items():
            out += chunk(b"tEXt", key.encode("latin-1") + b"\x00" + value.encode("latin-1", "replace"))
        return out + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def _builtin_chart(path: str, panels: list[Panel], title: str) -> None:
    group, bar, left, right, plot_h, panel_gap = 110, 30, 56, 16, 240, 70
    n_models = max(len(p[1]) for p in panels)
    contenders = list(dict.fromkeys(c for p in panels for c in p[2]))
    width = max(left + group * n_models + right, _Canvas.text_width(title, 2) + 20,
                *(left + _Canvas.text_width(p[0]) + 10 for p in panels))
    head = 48 if title else 28
    height = head + len(panels) * (plot_h + panel_gap)
    c = _Canvas(width, height)
    if title:
        c.text(width // 2, 8, title, scale=2, anchor="center")
    x = left  # legend
    for contender in contenders:
        c.rect(x, head - 16, x + 10, head - 6, COLORS.get(contender, _OTHER))
        c.text(x + 14, head - 15, contender)
        x += 14 + c.text_width(contender) + 18
    c.text(x, head - 15, "x = failed", color=(200, 0, 0))
    for p, panel in enumerate(panels):
        name, models, series = panel
        lo, hi = _range(panel)
        y0 = head + p * (plot_h + panel_gap) + 22  # top of the plot area
        base = y0 + plot_h  # the axis, at lo
        right_end = left + group * len(models)

        def y_of(v: float) -> int:
            return base - round(math.log2(v / lo) / math.log2(hi / lo) * plot_h)

        c.text(left, y0 - 16, name + " - log scale")
        for t in _ticks(lo, hi):
            y = y_of(t)
            c.rect(left, y, right_end, y + 1, (225, 225, 225))
            c.text(left - 6, y - 3, f"{t:g}", anchor="right")
        c.rect(left - 1, y0, left, base + 1, (0, 0, 0))
        c.rect(left - 1, base, right_end, base + 1, (0, 0, 0))
        for i, model in enumerate(models):
            gx = left + i * group + (group - bar * len(series)) // 2
            for k, (contender, values) in enumerate(series.items()):
                v = values[i]
                bx = gx + k * bar
                if v is None or not math.isfinite(v) or v <= 0:
                    c.text(bx + bar // 2, base - 9, "x", color=(200, 0, 0), anchor="center")
                    continue
                c.rect(bx + 1, y_of(v), bx + bar - 1, base, COLORS.get(contender, _OTHER))
                if contender != "eager":
                    c.text(bx + bar // 2, y_of(v) - 9, f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}", anchor="center")
            label = model if c.text_width(model) <= group - 4 else model[: (group - 4) // 6]
            c.text(left + i * group + group // 2, base + 6, label, anchor="center")
        for xd in range(left, right_end, 6):  # 1: eager's speed
            c.rect(xd, y_of(1.0), xd + 3, y_of(1.0) + 1, (0, 0, 0))
    legend = "; ".join(f"{p[0]}: " + ", ".join(
        f"{m} " + "/".join(f"{k}={'failed' if s[i] is None else format(s[i], '.2f')}" for k, s in p[2].items())
        for i, m in enumerate(p[1])) for p in panels)
    with open(path, "wb") as f:
        f.write(c.png({"Title": title or "speedup over eager", "Description": legend}))
