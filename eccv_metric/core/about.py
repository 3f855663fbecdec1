"""What the package is called and where it lives: one place for pyproject, the evaluate module, the cards and push.

The distribution (``pip install eccv-caption-hf``) installs two import packages,
``eccv_metric`` and ``eccv_caption_dataset``; evaluate's missing-module hint in
the Hub-loaded script names the distribution (``# From: eccv-caption-hf`` on
each ``eccv_metric`` import line). The version is :data:`__version__` here, the one source: pyproject reads it
(statically: this module imports nothing) and ``eccv_metric.__version__`` is this one.
"""

__version__ = "0.2.0"

DISTRIBUTION = "eccv-caption-hf"
PYPI_URL = "https://pypi.org/project/eccv-caption-hf/"
OFFICIAL_CODE_URL = "https://github.com/naver-ai/eccv-caption"
PAPER_URL = "https://arxiv.org/abs/2204.03359"
LICENSE = "MIT"


def install_extra(extra: str) -> str:
    """How to install one of the package's extras, as the README installs it: from the clone (the package is not
    on PyPI yet)."""
    return f'pip install -e ".[{extra}]" in the {DISTRIBUTION} clone'
