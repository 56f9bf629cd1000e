#!/usr/bin/python3
"""Golden values for golf report's significance tests, from SciPy.

usage: /usr/bin/python3 scripts/report_golden.py > report/testdata/ttest_golden.json

Needs Debian's python3-scipy (apt-get install -y python3-scipy; SciPy 1.10).
The Go tests (report/stats_test.go) read the JSON; they never run Python.

The challenge admits a record when its runs beat the current record by at
least MARGIN nats at p < 0.01. golf report tests

  one sample (--against X):  H1 mean(x) < X - margin
      scipy.stats.ttest_1samp(x, popmean=X - margin, alternative='less')
  two samples (--against-runs): H1 mean(a) < mean(b) - margin
      scipy.stats.ttest_ind(a, b - margin, equal_var=False, alternative='less')
      (Welch's test: the margin shifts the baseline runs' scores)

SciPy 1.10's results carry no degrees of freedom, so df is computed here
(n - 1; Welch-Satterthwaite for two samples) and checked against SciPy: the
Student t CDF at SciPy's statistic with that df must give SciPy's p-value.

seeds_needed is, for runs that show more than the margin but not at
p < 0.01, the smallest number of runs with the same mean and spread that
would (0 when not asked, -1 when none up to 64).

Samples are drawn from a fixed generator and rounded to 8 decimals, as the
logs print scores; the last Welch case is two public records' real scores
(openai/parameter-golf, records/track_10min_16mb: 2026-03-25_ValCalib_GPTQ_
XSA_BigramHash3072 against 2026-03-23_LeakyReLU_LegalTTT_ParallelMuon, whose
submission.json states Welch t=-11.8339, df=3.3063 at margin 0).
"""
import json
import sys

import numpy as np
import scipy
from scipy import stats

MARGINS = [0.0, 0.005]
ALPHA = 0.01


def seeds_needed_1samp(x, mu):
    # The smallest run count (up to 64) at which runs with x's mean and
    # standard deviation pass the one-sample test; 0 when x passes or its
    # mean is not below mu; -1 when no count up to 64 does.
    mean, s = np.mean(x), np.std(x, ddof=1)
    if mean >= mu or stats.ttest_1samp(x, mu, alternative="less").pvalue < ALPHA:
        return 0
    for m in range(len(x) + 1, 65):
        if stats.t.cdf((mean - mu) / (s / np.sqrt(m)), m - 1) < ALPHA:
            return m
    return -1


def seeds_needed_welch(a, shifted):
    # As seeds_needed_1samp, growing a while the baseline stays as it is;
    # the p-value comes from SciPy's Welch test on summary statistics.
    ma, sa = np.mean(a), np.std(a, ddof=1)
    mb, sb = np.mean(shifted), np.std(shifted, ddof=1)
    if ma >= mb or stats.ttest_ind(a, shifted, equal_var=False, alternative="less").pvalue < ALPHA:
        return 0
    for m in range(len(a) + 1, 65):
        r = stats.ttest_ind_from_stats(ma, sa, m, mb, sb, len(shifted), equal_var=False, alternative="less")
        if r.pvalue < ALPHA:
            return m
    return -1


def sample(rng, n, mean, sd):
    return [round(float(v), 8) for v in rng.normal(mean, sd, n)]


def welch_df(a, b):
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    return float((va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)))


def check_df(t, p, df):
    # SciPy's own p-value must follow from its t and our df.
    again = stats.t.cdf(t, df)
    if abs(again - p) > 1e-12 * max(p, 1e-300):
        sys.exit(f"df {df} does not reproduce SciPy's p: t={t} p={p} cdf={again}")


def one_sample_cases(rng):
    out = []
    # (n, sd): the spread of seeds; X is set so that some cases pass at
    # p < 0.01 and some do not.
    for n, sd, gain in [(2, 0.0006, 0.009), (3, 0.0008, 0.008), (5, 0.0010, 0.006), (10, 0.0012, 0.0055)]:
        against = 1.89002068
        x = sample(rng, n, against - gain, sd)
        for margin in MARGINS:
            r = stats.ttest_1samp(x, popmean=against - margin, alternative="less")
            df = n - 1
            check_df(float(r.statistic), float(r.pvalue), df)
            out.append({
                "x": x, "against": against, "margin": margin,
                "mean": float(np.mean(x)), "std": float(np.std(x, ddof=1)),
                "t": float(r.statistic), "df": float(df), "p": float(r.pvalue),
                "alpha": ALPHA, "seeds_needed": seeds_needed_1samp(x, against - margin),
            })
    return out


def welch_cases(rng):
    pairs = []
    for na, nb, sda, sdb, gain in [(2, 2, 0.0005, 0.0009, 0.008), (3, 3, 0.0007, 0.0006, 0.007),
                                   (5, 3, 0.0011, 0.0004, 0.0065), (3, 10, 0.0006, 0.0015, 0.009),
                                   (10, 5, 0.0009, 0.0009, 0.0052)]:
        b = sample(rng, nb, 1.89, sdb)
        a = sample(rng, na, 1.89 - gain, sda)
        pairs.append((a, b))
    # Public records (val_loss of the last NAME_exact line of each seed's log).
    pairs.append(([1.88276292, 1.88156874, 1.88220393], [1.88976776, 1.88919190, 1.89110239]))
    out = []
    for a, b in pairs:
        for margin in MARGINS:
            shifted = np.asarray(b) - margin
            r = stats.ttest_ind(a, shifted, equal_var=False, alternative="less")
            df = welch_df(a, shifted)
            check_df(float(r.statistic), float(r.pvalue), df)
            out.append({
                "a": a, "b": b, "margin": margin,
                "mean_a": float(np.mean(a)), "std_a": float(np.std(a, ddof=1)),
                "mean_b": float(np.mean(b)), "std_b": float(np.std(b, ddof=1)),
                "t": float(r.statistic), "df": df, "p": float(r.pvalue),
                "alpha": ALPHA, "seeds_needed": seeds_needed_welch(a, shifted),
            })
    return out


def main():
    rng = np.random.default_rng(20240520)
    golden = {
        "generator": "scripts/report_golden.py",
        "scipy": scipy.__version__,
        "numpy": np.__version__,
        "one_sample": one_sample_cases(rng),
        "welch": welch_cases(rng),
    }
    json.dump(golden, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
