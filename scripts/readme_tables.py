"""Regenerate the registry's tables in README.md, the docs site's pages and the metric card (``<!-- name -->``
blocks of eccv_metric.benchmarks.docs).

Usage: python scripts/readme_tables.py   (tests/unit/test_registry.py fails when the files are out of step)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eccv_metric import EVALUATE_MODULE_DIR  # noqa: E402
from eccv_metric.benchmarks.docs import fill_tables  # noqa: E402

FILES = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), EVALUATE_MODULE_DIR / "README.md")


def main() -> int:
    for path in FILES:
        text = path.read_text()
        new = fill_tables(text)
        if new != text:
            path.write_text(new)
            print(f"updated {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
