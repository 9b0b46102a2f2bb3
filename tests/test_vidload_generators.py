"""vidload's random generators against their specified distributions, with
fixed seeds: Zipf popularity (chi-square), Poisson arrivals and viewing
times (Kolmogorov-Smirnov), and that `--sample` is reproducible."""
import math
import os
import subprocess

import numpy as np
import pytest

from conftest import bin_path
from fixtures_vidload import write_library, SD, SEGMENT
from libception import vidload
from libception.cmd_mklib import generate


def chi2_critical(df, z=3.09):
    """Upper quantile of chi-square (Wilson-Hilferty); z = 3.09 is p = 0.001."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def ks_critical(n):
    """Kolmogorov-Smirnov critical D at p = 0.001."""
    return 1.95 / math.sqrt(n)


def ks_stat(samples, cdf):
    x = np.sort(np.asarray(samples, dtype=float))
    n = len(x)
    f = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(0, n) / n))


def zipf_pmf(n, alpha):
    w = np.arange(1, n + 1, dtype=float) ** -alpha
    return w / w.sum()


def zipf_chi2(ranks, n, alpha):
    counts = np.bincount(np.asarray(ranks) - 1, minlength=n)
    expected = zipf_pmf(n, alpha) * len(ranks)
    return float(((counts - expected) ** 2 / expected).sum())


def test_zipf_ranks_follow_zipf_0_8():
    n, count = 200, 200000
    ranks = vidload.sample("zipf", count, videos=n, seed=11)
    assert min(ranks) == 1 and max(ranks) <= n
    assert zipf_chi2(ranks, n, 0.8) < chi2_critical(n - 1)
    # The test has power: the same draws are far from a neighbouring exponent.
    assert zipf_chi2(ranks, n, 0.7) > 5 * chi2_critical(n - 1)


def test_zipf_exponent_is_settable():
    n, count = 100, 100000
    ranks = vidload.sample("zipf", count, videos=n, seed=5, zipf=1.2)
    assert zipf_chi2(ranks, n, 1.2) < chi2_critical(n - 1)


def test_arrivals_are_poisson():
    rate, count = 7.5, 50000
    gaps = np.array(vidload.sample("arrivals", count, rate=rate, seed=3))
    assert ks_stat(gaps, lambda x: 1 - np.exp(-rate * x)) < ks_critical(count)
    # Mean within 4 standard errors of 1/rate.
    assert abs(gaps.mean() - 1 / rate) < 4 * (1 / rate) / math.sqrt(count)


def view_cdf(share, span):
    """CDF of the watched fraction below 1: `share` stop uniformly within
    the first `span` of the video, the rest (an atom at 1) watch it all."""
    return lambda x: share * np.minimum(x / span, 1.0)


@pytest.mark.parametrize("share,span", [(0.44, 0.2), (0.6, 0.3)])
def test_viewing_fraction_follows_the_mixture(tmp_path, share, span):
    lib = tmp_path / "lib.lcvl"
    write_library(lib, [(f"sd/v{i:03d}.mp4", (3 + i % 40) * SEGMENT, SD, 0) for i in range(300)])
    count = 40000
    pairs = np.array(vidload.sample("views", count, library=lib, seed=9, views=f"{share},{span}"))
    frac = pairs[:, 0] / pairs[:, 1]
    full = frac >= 1.0 - 1e-9
    # The atom: binomial proportion within 4 standard errors.
    sd = math.sqrt(share * (1 - share) / count)
    assert abs((1 - full.mean()) - share) < 4 * sd
    # The early part: uniform on [0, span), by KS on the conditional distribution.
    early = frac[~full]
    assert early.max() < span + 1e-6
    assert ks_stat(early, lambda x: np.minimum(x / span, 1.0)) < ks_critical(len(early))


def test_default_views_average_160_s_on_a_265_s_library(tmp_path):
    """The papers' means: videos averaging 265 s, views averaging about 160 s."""
    lib = tmp_path / "sd.lcvl"
    write_library(lib, generate("sd", count=5000, seed=1))
    pairs = np.array(vidload.sample("views", 100000, library=lib, seed=2))
    view, video = pairs[:, 0], pairs[:, 1]
    # Mean watched fraction is 1 - 0.44 * (1 - 0.2 / 2) = 0.604 of the drawn videos.
    assert abs(view.mean() / video.mean() - 0.604) < 0.01
    # With a 265 s library that is ~160 s (Zipf draws weight some videos more).
    assert 140 < view.mean() < 180, view.mean()


def test_samples_are_reproducible_and_seeded():
    a = vidload.sample("zipf", 1000, videos=50, seed=4)
    assert a == vidload.sample("zipf", 1000, videos=50, seed=4)
    assert a != vidload.sample("zipf", 1000, videos=50, seed=5)


@pytest.mark.parametrize("args,code,needle", [
    (["--rate", "x"], 2, 'vidload: --rate "x"'),
    (["--links", "fast"], 2, 'vidload: --links "fast"'),
    (["--sample", "gauss", "--count", "3"], 2, 'vidload: --sample "gauss"'),
    (["--url", "ftp://x/", "--library", "/dev/null", "--rate", "1", "--duration", "1"], 1,
     'vidload: library "/dev/null": no videos'),
    (["--url", "ftp://x/", "--library", "LIB", "--rate", "1", "--duration", "1"], 2,
     'vidload: --url "ftp://x/"'),
    (["--library", "LIB", "--rate", "1"], 2, "vidload: --url, --library, --rate and --duration"),
])
def test_bad_input_is_one_line_error(tmp_path, args, code, needle):
    lib = tmp_path / "lib.lcvl"
    write_library(lib, [("a.mp4", SEGMENT, SD, 0)])
    args = [str(lib) if a == "LIB" else a for a in args]
    out = subprocess.run([bin_path("vidload")] + args, capture_output=True, text=True)
    assert out.returncode == code
    assert out.stderr.splitlines()[0].startswith(needle), out.stderr
