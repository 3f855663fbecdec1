"""The defaults every front end shares, written once: signatures, flags, boxes and help texts read them here.

- :data:`KS`: the Ks of ``*_recalls`` (R@1, R@5, R@10, as the official package and the papers report).
- :data:`N_RESAMPLES` / :data:`SEED`: the bootstrap of the CxC correlations (``cxc_*_spearman``).
- :data:`PM_ZETA` / :data:`PM_INCLUDE_OWN` / :data:`PM_R_CAP`: Plausible Match as the ECCV Caption code's
  released PM files define it (zeta 2, a query's own image left out) and PMRP's cap of R (50).

:data:`KS_TEXT`: the Ks as the CLI's help and the Space's box show them (``1 5 10``).
"""

from __future__ import annotations

KS: tuple[int, ...] = (1, 5, 10)
N_RESAMPLES = 1000
SEED = 0
PM_ZETA = 2
PM_INCLUDE_OWN = False
PM_R_CAP = 50

KS_TEXT = " ".join(str(k) for k in KS)
