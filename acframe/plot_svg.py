"""The learning-curve figure of ``acframe.plot`` as a self-contained SVG, drawn without matplotlib.

Every finished run writes ``curves.svg`` (``plot.write_run_curves``): importing matplotlib and rasterising four
panels cost 0.5–0.9 s at the end of every run — a fifth of a whole CartPole A2C run — while this writer takes a
few milliseconds and draws the same four panels (``plot.PANELS``), in the same colours, as text any browser, editor
or GitHub page shows. ``acframe -m plot ... --out FILE.svg`` writes it too; ``--out FILE.png`` (or ``.pdf``) uses
matplotlib.
"""
from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple
from xml.sax.saxutils import escape

import numpy as np

#: matplotlib's default colour cycle ('C0'...'C9'), so the SVG and the PNG colour a config alike
COLOURS = ('#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf')
WIDTH, HEIGHT = 1200, 900
#: at most this many points per polyline (longer curves are thinned evenly; the ends are kept)
MAX_POINTS = 2000


class Series:
    """One line of a panel: ``x``, ``y``, its colour index, an optional ± ``band`` and legend ``label``."""

    def __init__(self, x: np.ndarray, y: np.ndarray, colour: int, label: Optional[str] = None,
                 band: Optional[np.ndarray] = None, faint: bool = False, markers: bool = False) -> None:
        self.x, self.y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        self.colour, self.label, self.band, self.faint, self.markers = colour, label, band, faint, markers


def nice_ticks(low: float, high: float, count: int = 5) -> List[float]:
    """About ``count`` round tick values in ``[low, high]`` (a step of 1, 2 or 5 times a power of ten, the one nearest
    to a ``count``-th of the range)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return []
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = min((m * power for m in (1, 2, 5, 10)), key=lambda candidate: abs(math.log(candidate / raw)))
    first = math.ceil(low / step - 1e-9) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _label(value: float) -> str:
    if value == 0:
        return '0'
    if 1e3 <= abs(value) < 1e9 and float(value).is_integer():
        return f'{value:,.0f}'  # 15,000 env steps
    if abs(value) >= 1e9 or abs(value) < 1e-3:
        return f'{value:.3g}'
    return f'{value:.6g}'


def _padded(low: float, high: float, margin: float = 0.04) -> Tuple[float, float]:
    """``[low, high]`` widened by ``margin`` of its span on each side (a flat line: by one unit), so lines at the ends
    do not lie on the frame."""
    span = high - low
    if span <= 0:
        span = abs(low) or 1.0
        return low - span / 2, high + span / 2
    return low - margin * span, high + margin * span


def _finite(series: Series) -> Tuple[np.ndarray, np.ndarray]:
    keep = np.isfinite(series.x) & np.isfinite(series.y)
    x, y = series.x[keep], series.y[keep]
    if len(x) > MAX_POINTS:
        index = np.unique(np.linspace(0, len(x) - 1, MAX_POINTS).round().astype(int))
        x, y = x[index], y[index]
    return x, y


def _panel(title: str, x_label: str, series: Sequence[Series], box: Tuple[float, float, float, float]) -> List[str]:
    left, top, width, height = box
    parts = [f'<text x="{left + width / 2:.1f}" y="{top - 8:.1f}" text-anchor="middle" font-size="13">'
             f'{escape(title)}</text>',
             f'<rect x="{left:.1f}" y="{top:.1f}" width="{width:.1f}" height="{height:.1f}" fill="none" stroke="#444"/>']
    drawn = [(s, *_finite(s)) for s in series]
    drawn = [(s, x, y) for s, x, y in drawn if len(x)]
    if not drawn:
        parts.append(f'<text x="{left + width / 2:.1f}" y="{top + height / 2:.1f}" text-anchor="middle" '
                     f'fill="grey" font-size="13">not logged</text>')
        return parts
    xs = np.concatenate([x for _, x, _ in drawn])
    ys = np.concatenate([y for _, _, y in drawn] + [y - s.band[:len(y)] for s, _, y in drawn if s.band is not None]
                        + [y + s.band[:len(y)] for s, _, y in drawn if s.band is not None])
    x_low, x_high = _padded(float(xs.min()), float(xs.max()))
    y_low, y_high = _padded(float(ys.min()), float(ys.max()))
    x_ticks = [t for t in nice_ticks(x_low, x_high) if x_low <= t <= x_high]
    y_ticks = [t for t in nice_ticks(y_low, y_high) if y_low <= t <= y_high]
    x_span, y_span = x_high - x_low, y_high - y_low

    def px(x: np.ndarray) -> np.ndarray:
        return left + (np.asarray(x) - x_low) / x_span * width

    def py(y: np.ndarray) -> np.ndarray:
        return top + height - (np.asarray(y) - y_low) / y_span * height

    for tick in x_ticks:
        X = float(px(tick))
        parts.append(f'<line x1="{X:.1f}" y1="{top:.1f}" x2="{X:.1f}" y2="{top + height:.1f}" stroke="#ddd"/>'
                     f'<text x="{X:.1f}" y="{top + height + 16:.1f}" text-anchor="middle" font-size="11">'
                     f'{_label(tick)}</text>')
    for tick in y_ticks:
        Y = float(py(tick))
        parts.append(f'<line x1="{left:.1f}" y1="{Y:.1f}" x2="{left + width:.1f}" y2="{Y:.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 6:.1f}" y="{Y + 4:.1f}" text-anchor="end" font-size="11">{_label(tick)}</text>')
    parts.append(f'<text x="{left + width / 2:.1f}" y="{top + height + 34:.1f}" text-anchor="middle" '
                 f'font-size="12">{escape(x_label)}</text>')
    for s, x, y in drawn:
        colour = COLOURS[s.colour % len(COLOURS)]
        if s.band is not None:
            band = s.band[:len(y)]
            outline = np.concatenate([np.stack([px(x), py(y + band)], 1), np.stack([px(x), py(y - band)], 1)[::-1]])
            parts.append(f'<polygon points="{_points(outline)}" fill="{colour}" fill-opacity="0.2" stroke="none"/>')
        opacity, stroke = (0.25, 0.8) if s.faint else (0.9, 2.0 if s.band is not None else 1.2)
        if len(x) > 1:
            parts.append(f'<polyline points="{_points(np.stack([px(x), py(y)], 1))}" fill="none" stroke="{colour}" '
                         f'stroke-opacity="{opacity}" stroke-width="{stroke}"/>')
        if s.markers or len(x) == 1:
            parts.extend(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="2.5" fill="{colour}" fill-opacity="{opacity}"/>'
                         for a, b in zip(px(x), py(y)))
    labels = [(s.label, COLOURS[s.colour % len(COLOURS)]) for s, _, _ in drawn if s.label]
    for i, (label, colour) in enumerate(labels):
        Y = top + 16 + 16 * i
        parts.append(f'<line x1="{left + 10:.1f}" y1="{Y - 4:.1f}" x2="{left + 30:.1f}" y2="{Y - 4:.1f}" '
                     f'stroke="{colour}" stroke-width="2"/><text x="{left + 36:.1f}" y="{Y:.1f}" font-size="11">'
                     f'{escape(label)}</text>')
    return parts


def _points(xy: np.ndarray) -> str:
    return ' '.join(f'{a:.1f},{b:.1f}' for a, b in xy)


def svg_figure(panels: Sequence[Tuple[str, Sequence[Series]]], x_label: str) -> str:
    """A 2 × 2 grid of ``(title, series)`` panels as one SVG document."""
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="DejaVu Sans, Arial, sans-serif">',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
    cell_w, cell_h = WIDTH / 2, HEIGHT / 2
    for i, (title, series) in enumerate(panels):
        row, col = divmod(i, 2)
        box = (col * cell_w + 80, row * cell_h + 36, cell_w - 110, cell_h - 96)
        parts.extend(_panel(title, x_label, series, box))
    parts.append('</svg>')
    return '\n'.join(parts) + '\n'
