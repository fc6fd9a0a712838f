"""Inline SVG of paired score deltas (no JS): a histogram with the interval marked, or,
for a certificate without per-sample bins, the interval alone."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

__all__ = ["binned_histogram_svg", "histogram_svg", "interval_svg"]

_W, _H, _PAD, _AXIS = 420, 160, 12, 22


def _bins(values: Sequence[float], lo: float, hi: float, count: int) -> list[int]:
    width = (hi - lo) / count
    bins = [0] * count
    for v in values:
        index = min(count - 1, max(0, int((v - lo) / width)))
        bins[index] += 1
    return bins


def histogram_svg(
    deltas: Sequence[float], interval: Sequence[float] | None = None, *, bins: int = 20
) -> str:
    """SVG of ``deltas`` in ``bins`` bins; the interval is a shaded band, the mean a line
    and zero a dashed line. Classes: ``enclave-histogram``, ``enclave-bar``,
    ``enclave-interval``, ``enclave-mean``."""
    values = [float(d) for d in deltas if isinstance(d, int | float) and math.isfinite(d)]
    if not values:
        return '<div class="enclave-histogram enclave-empty">no paired deltas</div>'
    points = values + ([float(interval[0]), float(interval[1])] if interval else []) + [0.0]
    lo, hi = min(points), max(points)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.01, hi + 0.01
    span = hi - lo
    lo, hi = lo - span * 0.05, hi + span * 0.05
    counts = _bins(values, lo, hi, bins)
    peak = max(counts)
    plot_w, plot_h = _W - 2 * _PAD, _H - _PAD - _AXIS

    def x(v: float) -> float:
        return _PAD + (v - lo) / (hi - lo) * plot_w

    parts = [
        f'<svg class="enclave-histogram" data-count="{len(values)}" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" role="img" xmlns="http://www.w3.org/2000/svg">',
        f"<title>paired score deltas, n={len(values)}</title>",
    ]
    if interval:
        a, b = x(float(interval[0])), x(float(interval[1]))
        parts.append(
            f'<rect class="enclave-interval" data-low="{float(interval[0]):.6f}" '
            f'data-high="{float(interval[1]):.6f}" x="{a:.1f}" y="{_PAD}" '
            f'width="{max(b - a, 1.0):.1f}" height="{plot_h}" fill="#f4b942" fill-opacity="0.3"/>'
        )
    bar_w = plot_w / bins
    for i, c in enumerate(counts):
        if not c:
            continue
        h = c / peak * plot_h
        parts.append(
            f'<rect class="enclave-bar" data-n="{c}" x="{_PAD + i * bar_w + 0.5:.1f}" '
            f'y="{_PAD + plot_h - h:.1f}" width="{max(bar_w - 1, 1):.1f}" height="{h:.1f}" '
            'fill="#3b6ea5"/>'
        )
    mean = math.fsum(values) / len(values)
    base = _PAD + plot_h
    parts.append(
        f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="{_PAD}" y2="{base}" stroke="#555" '
        'stroke-dasharray="3,3"/>'
    )
    parts.append(
        f'<line class="enclave-mean" data-mean="{mean:.6f}" x1="{x(mean):.1f}" '
        f'x2="{x(mean):.1f}" y1="{_PAD}" y2="{base}" stroke="#c0392b" stroke-width="2"/>'
    )
    parts.append(f'<line x1="{_PAD}" x2="{_W - _PAD}" y1="{base}" y2="{base}" stroke="#333"/>')
    ticks = [lo, hi] + ([0.0] if min(abs(lo), abs(hi)) > (hi - lo) * 0.15 else [])
    for v in ticks:
        anchor = "start" if v == lo else "end" if v == hi else "middle"
        parts.append(
            f'<text x="{x(v):.1f}" y="{_H - 6}" font-size="10" text-anchor="{anchor}">'
            f"{escape(f'{v:+.3f}')}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def binned_histogram_svg(
    edges: Sequence[float],
    counts: Sequence[int],
    interval: Sequence[float] | None = None,
    mean: float | None = None,
) -> str:
    """SVG of a certificate's fixed-bin histogram (per-sample deltas never leave the
    enclave): one equal-width column per bin, labelled by its edges; the interval is a
    shaded band and the mean a line, placed within their bins by linear interpolation.
    Same classes as ``histogram_svg``."""
    ok = (
        len(edges) == len(counts) + 1
        and all(isinstance(e, int | float) and math.isfinite(e) for e in edges)
        and all(isinstance(c, int) and c >= 0 for c in counts)
    )
    if not ok or not sum(counts):
        return '<div class="enclave-histogram enclave-empty">no paired deltas</div>'
    n, peak = sum(counts), max(counts)
    plot_w, plot_h = _W - 2 * _PAD, _H - _PAD - _AXIS
    bar_w = plot_w / len(counts)

    def x(v: float) -> float:
        v = min(edges[-1], max(edges[0], v))
        for i in range(len(counts)):
            a, b = edges[i], edges[i + 1]
            if v <= b or i == len(counts) - 1:
                return _PAD + (i + (v - a) / ((b - a) or 1.0)) * bar_w
        return _PAD + plot_w

    parts = [
        f'<svg class="enclave-histogram" data-count="{n}" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" role="img" xmlns="http://www.w3.org/2000/svg">',
        f"<title>paired score deltas in fixed bins, n={n}</title>",
    ]
    if interval and len(interval) == 2:
        a, b = x(float(interval[0])), x(float(interval[1]))
        parts.append(
            f'<rect class="enclave-interval" data-low="{float(interval[0]):.6f}" '
            f'data-high="{float(interval[1]):.6f}" x="{a:.1f}" y="{_PAD}" '
            f'width="{max(b - a, 1.0):.1f}" height="{plot_h}" fill="#f4b942" fill-opacity="0.3"/>'
        )
    for i, c in enumerate(counts):
        if not c:
            continue
        h = c / peak * plot_h
        parts.append(
            f'<rect class="enclave-bar" data-n="{c}" data-low="{edges[i]:g}" '
            f'data-high="{edges[i + 1]:g}" x="{_PAD + i * bar_w + 0.5:.1f}" '
            f'y="{_PAD + plot_h - h:.1f}" width="{max(bar_w - 1, 1):.1f}" height="{h:.1f}" '
            'fill="#3b6ea5"/>'
        )
    base = _PAD + plot_h
    parts.append(
        f'<line x1="{x(0.0):.1f}" x2="{x(0.0):.1f}" y1="{_PAD}" y2="{base}" stroke="#555" '
        'stroke-dasharray="3,3"/>'
    )
    if isinstance(mean, int | float) and math.isfinite(mean):
        parts.append(
            f'<line class="enclave-mean" data-mean="{mean:.6f}" x1="{x(mean):.1f}" '
            f'x2="{x(mean):.1f}" y1="{_PAD}" y2="{base}" stroke="#c0392b" stroke-width="2"/>'
        )
    parts.append(f'<line x1="{_PAD}" x2="{_W - _PAD}" y1="{base}" y2="{base}" stroke="#333"/>')
    for v, anchor in ((edges[0], "start"), (0.0, "middle"), (edges[-1], "end")):
        parts.append(
            f'<text x="{x(v):.1f}" y="{_H - 6}" font-size="10" text-anchor="{anchor}">'
            f"{escape(f'{v:+g}')}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def interval_svg(
    mean: float,
    interval: Sequence[float],
    equivalence: Sequence[float] | None,
    tolerance: float,
) -> str:
    """SVG of a v3 certificate's comparison, which has no per-sample bins: the mean
    paired delta with its interval (and the TOST interval below it) against the score
    tolerance band around zero. Classes: ``enclave-delta-chart``, ``enclave-interval``,
    ``enclave-equivalence``, ``enclave-tolerance``, ``enclave-mean``."""
    lo, hi = float(interval[0]), float(interval[1])
    reach = min(1.0, max(abs(lo), abs(hi), float(tolerance), 1e-4) * 1.25)
    plot_w = _W - 2 * _PAD

    def x(v: float) -> float:
        return _PAD + (max(-reach, min(reach, v)) + reach) / (2 * reach) * plot_w

    tol = float(tolerance)
    parts = [
        f'<svg class="enclave-delta-chart" width="{_W}" height="96" viewBox="0 0 {_W} 96" '
        'role="img" xmlns="http://www.w3.org/2000/svg">',
        f"<title>mean paired score delta {float(mean):+.4g}, interval "
        f"[{lo:+.4g}, {hi:+.4g}]</title>",
        f'<rect class="enclave-tolerance" x="{x(-tol):.1f}" y="{_PAD}" '
        f'width="{max(x(tol) - x(-tol), 1.0):.1f}" height="52" fill="#999" fill-opacity="0.2"/>',
        f'<rect class="enclave-interval" data-low="{lo:.6f}" data-high="{hi:.6f}" '
        f'x="{x(lo):.1f}" y="{_PAD + 6}" width="{max(x(hi) - x(lo), 2.0):.1f}" height="14" '
        'fill="#f4b942" fill-opacity="0.6"/>',
    ]
    if equivalence is not None:
        a, b = float(equivalence[0]), float(equivalence[1])
        parts.append(
            f'<rect class="enclave-equivalence" data-low="{a:.6f}" data-high="{b:.6f}" '
            f'x="{x(a):.1f}" y="{_PAD + 28}" width="{max(x(b) - x(a), 2.0):.1f}" height="14" '
            'fill="#4a90d9" fill-opacity="0.5"/>'
        )
    m = x(float(mean))
    parts += [
        f'<line class="enclave-mean" x1="{m:.1f}" x2="{m:.1f}" y1="{_PAD}" y2="{_PAD + 52}" '
        'stroke="#333" stroke-width="2"/>',
        f'<line class="enclave-axis" x1="{_PAD}" x2="{_W - _PAD}" y1="70" y2="70" stroke="#666"/>',
        f'<text x="{_PAD}" y="88" font-size="11">{-reach:+.3g}</text>',
        f'<text x="{x(0):.1f}" y="88" font-size="11" text-anchor="middle">0</text>',
        f'<text x="{_W - _PAD}" y="88" font-size="11" text-anchor="end">{reach:+.3g}</text>',
        "</svg>",
    ]
    return "".join(parts)
