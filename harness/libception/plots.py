"""PNG plots of benchmark results (matplotlib, Agg backend: no display)."""
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _wrapped(labels, width=18):
    """Long configuration names on several lines, so neighbours do not overlap."""
    return [textwrap.fill(label, width) for label in labels]


def bars(path, labels, values, ylabel, title, annotate=None):
    """One bar per configuration (e.g. maximum failure-free rate);
    `annotate` optionally gives a text per bar (e.g. "2.0x")."""
    fig, ax = plt.subplots(figsize=(max(4, 1.3 * len(labels) + 2), 3.6))
    xs = range(len(labels))
    ax.bar(xs, [v or 0 for v in values], color="#4a7ab5")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(_wrapped(labels), rotation=20 if len(labels) > 4 else 0, ha="right"
                       if len(labels) > 4 else "center")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    for x, v, note in zip(xs, values, annotate or [None] * len(labels)):
        text = "n/a" if v is None else (note or f"{v:.3g}")
        ax.text(x, (v or 0), text, ha="center", va="bottom", fontsize=8)
    return _save(fig, path)


def probes(path, series, title, threshold=None):
    """Failed-session percentage against offered rate, one series per
    configuration: series = {label: [(rate, failed_pct), ...]}."""
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for label, pts in series.items():
        pts = sorted(pts)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    if threshold is not None:
        ax.axhline(threshold, color="grey", linestyle=":", label=f"{threshold}% limit")
    ax.set_xlabel("offered sessions/s")
    ax.set_ylabel("failed sessions (%)")
    ax.set_yscale("symlog", linthresh=0.1)
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return _save(fig, path)


def lines(path, series, xlabel, ylabel, title, logx=False):
    """Generic line plot: series = {label: [(x, y), ...]}."""
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for label, pts in series.items():
        pts = sorted(p for p in pts if p[1] is not None)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return _save(fig, path)


def cdfs(path, series, xlabel, title):
    """Cumulative distributions: series = {label: [(x, cumulative_share), ...]}
    (already cumulative, e.g. from a log histogram)."""
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for label, pts in series.items():
        ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of calls")
    ax.set_ylim(0, 1.01)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return _save(fig, path)


def grouped_bars(path, labels, groups, ylabel, title):
    """Several values per configuration side by side: groups = {name: [value per label]}
    (e.g. MB/s to clients and MB/s from disk, as the paper's Fig. 8)."""
    fig, ax = plt.subplots(figsize=(max(4, 1.6 * len(labels) + 2), 3.6))
    width = 0.8 / max(1, len(groups))
    for i, (name, values) in enumerate(groups.items()):
        xs = [x + (i - (len(groups) - 1) / 2) * width for x in range(len(labels))]
        ax.bar(xs, [v or 0 for v in values], width, label=name)
        for x, v in zip(xs, values):
            ax.text(x, v or 0, "n/a" if v is None else f"{v:.3g}", ha="center", va="bottom",
                    fontsize=8)
    ax.set_xticks(list(range(len(labels))))
    ax.set_xticklabels(_wrapped(labels))
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return _save(fig, path)
