"""``python -m eccv_metric.cli``: the ``eccv-caption`` command."""

import sys

from eccv_metric.cli.main import main

sys.exit(main())
