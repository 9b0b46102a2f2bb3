"""Plots shared by scenarios that vary one size (prefetch, read_ahead_kb)."""
from .. import plots


def sweep_plot(path, series, vanilla_rate, xlabel, title):
    if vanilla_rate is not None:
        xs = [x for pts in series.values() for x, _ in pts]
        if xs:
            series = dict(series)
            series["vanilla"] = [(min(xs), vanilla_rate), (max(xs), vanilla_rate)]
    return plots.lines(path, series, xlabel, "max failure-free sessions/s", title, logx=True)
