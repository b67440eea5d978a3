"""How aqmlab's figures look: the ``paper`` style (the default of ``aqmlab plot`` and of the
reproduction report) and the ``draft`` style.

``paper``: no title inside the image (the caption carries it), symbols set in mathtext ($\\rho_0(y)$,
$Q_a$, $p_0$), one-column (3.5 in) or two-column (7.16 in) widths with 8-point text, panels that are
compared share their y axis, one legend for the figure placed above the panels (never over the
data), and PDF + SVG + 300 dpi PNG files cropped to their content.

``draft``: the title (and what was run) inside the image, a larger canvas, PNG at 130 dpi and SVG.

Only matplotlib is needed, imported when a figure is made.
"""

from __future__ import annotations

import re
from pathlib import Path

STYLES = ("paper", "draft")
#: figure widths in inches: one and two columns of a two-column paper (IEEE)
WIDTHS = {1: 3.5, 2: 7.16}

PAPER_RC = {
    "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7, "ytick.labelsize": 7,
    "legend.fontsize": 7, "legend.frameon": False, "lines.linewidth": 1.0, "lines.markersize": 3.5,
    "axes.linewidth": 0.6, "grid.linewidth": 0.4, "xtick.major.width": 0.6, "ytick.major.width": 0.6,
    "errorbar.capsize": 2, "mathtext.fontset": "dejavusans", "pdf.fonttype": 42, "ps.fonttype": 42,
    "svg.fonttype": "none", "savefig.dpi": 300,
}

# plain-text symbols of the papers -> mathtext (whole words only; text inside $...$ is left alone)
_SYMBOLS = [
    (r"rho0\(y\)", r"$\\rho_0(y)$"), (r"rho_0\(y\)", r"$\\rho_0(y)$"), (r"rho0", r"$\\rho_0$"), (r"rho", r"$\\rho$"),
    (r"v\(y\)", r"$v(y)$"), (r"mu0", r"$\\mu_0$"), (r"μ0", r"$\\mu_0$"), (r"ρ0", r"$\\rho_0$"), (r"mu_0", r"$\\mu_0$"), (r"x0/c", r"$x_0/c$"), (r"x0", r"$x_0$"),
    (r"Q_a", r"$Q_a$"), (r"Q_c", r"$Q_c$"), (r"p0", r"$p_0$"), (r"p_0", r"$p_0$"), (r"alpha_hat", r"$\\hat{\\alpha}$"),
    (r"alpha", r"$\\alpha$"), (r"epsilon", r"$\\varepsilon$"), (r"beta", r"$\\beta$"), (r"tau", r"$\\tau$"),
    (r"w_q", r"$w_q$"), (r"max_p", r"$\\mathrm{max}_p$"), (r"min_th", r"$\\mathrm{min}_{th}$"), (r"max_th", r"$\\mathrm{max}_{th}$"),
    (r"T_min", r"$T_\\mathrm{min}$"), (r"T_max", r"$T_\\mathrm{max}$"), (r"r_k", r"$r_k$"), (r"r0", r"$r_0$"), (r"q0", r"$q_0$"),
    (r"D_r", r"$D_r$"), (r"D_f", r"$D_f$"), (r"L_th", r"$L_{th}$"), (r"b_avg", r"$b_\\mathrm{avg}$"),
]
_SYMBOL_RE = [(re.compile(rf"(?<![\w$\\]){p}(?![\w$])"), r) for p, r in _SYMBOLS]


def mathtext(text: str) -> str:
    """``"rho0(y) at x0/c = 2"`` -> ``"$\\rho_0(y)$ at $x_0/c$ = 2"``; text already in ``$...$`` is kept."""
    if not text or not isinstance(text, str):
        return text
    parts = re.split(r"(\$[^$]*\$)", text)
    for i in range(0, len(parts), 2):  # the parts outside $...$
        s = parts[i]
        for rx, rep in _SYMBOL_RE:
            s = rx.sub(rep, s)
        parts[i] = s
    return "".join(parts).replace("$$", "")


def check(style: str) -> str:
    if style not in STYLES:
        raise ValueError(f"style {style!r}: one of {', '.join(STYLES)}")
    return style


def figsize(style: str, nrows: int, ncols: int, columns: int | None = None, row_height: float | None = None):
    """The canvas of a grid of panels. Paper: one column for a single panel, two for more (or as
    ``columns`` says), rows of about 2.2 in (1.3 in for stacked traces: ``row_height``)."""
    if style == "draft":
        w, h = (6.4, 4.2) if nrows * ncols == 1 else (4.6, 3.5)
        return w * ncols, (row_height or h) * nrows
    cols = columns or (1 if ncols == 1 else 2)
    width = WIDTHS[cols]
    per_row = row_height or (2.3 if ncols == 1 else min(2.3, 0.8 * width / ncols + 0.3))
    return width, per_row * nrows + 0.2


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display needed), imported on first use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def rc_context(style: str):
    import matplotlib

    return matplotlib.rc_context(PAPER_RC if style == "paper" else {})


def _legend_items(fig, axes, auto: bool = True):
    """Unique (handle, label) pairs of the axes' legends (and, with ``auto``, of their labelled
    artists); the axes' own legends are removed."""
    seen, handles, labels = set(), [], []
    for ax in axes:
        hs, ls = ax.get_legend_handles_labels() if auto else ([], [])
        leg = ax.get_legend()
        if leg is not None:
            hs = list(getattr(leg, "legend_handles", None) or getattr(leg, "legendHandles", []))
            ls = [t.get_text() for t in leg.get_texts()]
            leg.remove()
        for h, l in zip(hs, ls):
            if l and not l.startswith("_") and l not in seen:
                seen.add(l)
                handles.append(h)
                labels.append(l)
    return handles, labels


def polish(fig, axes, style: str, legend: bool = True) -> None:
    """Paper style: symbols in mathtext, one legend above the panels (the axes' labelled artists
    when ``legend``, and any legend an axes already has), constrained layout."""
    if style != "paper":
        return
    fig.set_layout_engine("constrained")
    # a label repeated under (or beside) several panels is written once for the figure
    for get, clear, sup in (("get_xlabel", "set_xlabel", fig.supxlabel), ("get_ylabel", "set_ylabel", fig.supylabel)):
        shown = [ax for ax in fig.axes if ax.get_visible() and getattr(ax, get)()]
        texts = {getattr(ax, get)() for ax in shown}
        if len(shown) > 1 and len(texts) == 1:
            for ax in shown:
                getattr(ax, clear)("")
            sup(texts.pop(), fontsize=8)
    for ax in fig.axes:
        _log_ticks(ax)
        ax.set_xlabel(mathtext(ax.get_xlabel()))
        ax.set_ylabel(mathtext(ax.get_ylabel()))
        ax.set_title(mathtext(ax.get_title()), fontsize=8)
    for t in (fig._supxlabel, fig._supylabel):
        if t is not None:
            t.set_text(mathtext(t.get_text()))
    handles, labels = _legend_items(fig, axes, auto=legend)
    if handles:
        width_in = fig.get_figwidth()
        longest = max(len(l) for l in labels)
        ncol = max(1, min(len(labels), int(width_in * 12 // max(longest + 4, 8))))
        fig.legend(handles, [mathtext(l) for l in labels], loc="outside upper center", ncols=ncol,
                   handlelength=1.8, columnspacing=1.2)


def _log_ticks(ax) -> None:
    """Logarithmic axes labelled with plain numbers: 1, 2, 5 per decade over up to three decades,
    the decades alone beyond (minor labels, which collide on short ranges, are dropped)."""
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fixed = (getattr(ax, "_aqmlab_fixed_x", False), False)  # x ticks already at the swept values
    for (axis, scale, lim), keep in zip(((ax.xaxis, ax.get_xscale(), ax.get_xlim()),
                                         (ax.yaxis, ax.get_yscale(), ax.get_ylim())), fixed):
        if keep or scale != "log" or min(lim) <= 0:
            continue
        decades = math.log10(max(lim) / min(lim))
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 3 else (1.0,)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


def save(fig, stem: Path, style: str) -> list[Path]:
    """Write the figure: paper -> .pdf, .svg, .png (300 dpi); draft -> .png (130 dpi), .svg."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    files = []
    exts = ("pdf", "svg", "png") if style == "paper" else ("png", "svg")
    for ext in exts:
        p = stem.with_name(f"{stem.name}.{ext}")
        if style == "paper":
            fig.savefig(p, dpi=300 if ext == "png" else None, bbox_inches="tight", pad_inches=0.02)
        else:
            fig.savefig(p, dpi=130 if ext == "png" else None)
        files.append(p)
    return files
