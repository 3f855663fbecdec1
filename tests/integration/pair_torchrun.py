"""A model run in one torchrun process (or alone), for tests/integration/test_pair_processes.py.

    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/integration/pair_torchrun.py SETTINGS.json

SETTINGS: ``data`` (the built-like folder), ``world`` (a folder for this process's synthetic world), ``out`` (the
results JSON, written by the process that scores), ``model`` (``torch-pairs`` or an ``hf:`` spec), ``sleep``
(seconds per pair batch, to be killed mid-run), ``block`` (pairs per block) and evaluate_model's keywords.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> None:
    settings = json.loads(Path(sys.argv[1]).read_text())
    import eccv_metric.models.pairs.pairset as pairset
    from eccv_metric.models import evaluate_model
    from tests.unit.pair_answers import TorchPairs
    from tests.unit.world import make_world

    pairset.PAIRS_PER_BLOCK = settings.pop("block", pairset.PAIRS_PER_BLOCK)
    rank = os.environ.get("RANK", "0")
    world = make_world(Path(settings.pop("world")) / f"rank{rank}")
    model = settings.pop("model")
    sleep = settings.pop("sleep", 0.0)
    out = Path(settings.pop("out"))
    data = settings.pop("data")
    if model == "torch-pairs":
        model = TorchPairs(sleep=sleep)
    result = evaluate_model(model, data, resources=world.resources(), workers=0, n_resamples=20, **settings)
    if result.scored:
        payload = {"means": result.results.means(), "provenance": result.provenance, "notes": result.results.notes}
        out.write_text(json.dumps(payload, default=str))
    print("DONE", rank, result.scored, flush=True)


if __name__ == "__main__":
    main()
