"""The Space app, served for real on 127.0.0.1 with the pinned gradio: gradio_client and headless Chromium.

Chromium is Debian's (`apt-get install chromium`), driven by playwright's Python package through
executable_path (no browser download). The server and the browser stop at the end of the module.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import sys
from pathlib import Path

import pytest

from eccv_metric import EVALUATE_MODULE_DIR
from eccv_metric import Metrics

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def load_app():
    spec = importlib.util.spec_from_file_location("space_app", EVALUATE_MODULE_DIR / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    return app


@pytest.fixture(scope="module")
def app():
    return load_app()


@pytest.fixture(scope="module")
def server(app):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    demo = app.build()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, show_error=True)
    yield f"http://127.0.0.1:{port}/"
    demo.close()


def test_requirements_pin_what_ci_tests(app):
    """The Space's requirements.txt pins exactly the gradio the tests run (installed from the `space` extra)."""
    import gradio

    lines = (EVALUATE_MODULE_DIR / "requirements.txt").read_text().split()
    assert f"gradio=={gradio.__version__}" in lines
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert f'"gradio=={gradio.__version__}"' in pyproject
    card = (EVALUATE_MODULE_DIR / "README.md").read_text().split("---")[1]
    assert f"sdk_version: {gradio.__version__}" in card  # the Hub installs the gradio of the card's header


def test_gradio_client_scores_a_real_top50_file(server, top50, metrics, tmp_path):
    from gradio_client import Client
    from gradio_client import handle_file

    i2t, t2i = top50
    path = tmp_path / "rank50.json"
    path.write_text(json.dumps({"i2t": i2t, "t2i": t2i}))
    targets = ["eccv_map_at_r", "eccv_r1", "coco_5k_recalls", "cxc_r1"]
    client = Client(server, verbose=False)
    status, table, raw = client.predict(
        handle_file(str(path)), "", targets, "1 5 10", False, None, None, None, api_name="/score"
    )
    assert status.startswith("scored 5,000 i2t queries, 25,000 t2i queries"), status
    assert json.loads(raw) == metrics.compute_all_metrics(i2t, t2i, targets, (1, 5, 10))
    rows = {r[0]: r[1:] for r in table["data"]}
    assert rows["eccv_map_at_r"][0] == round(100 * json.loads(raw)["eccv_map_at_r"]["i2t"], 2)
    # a partial file without the explicit choice: a one-line error
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"i2t": dict(list(i2t.items())[:10])}))
    status, _, raw = client.predict(
        handle_file(str(partial)), "", targets, "1", False, None, None, None, api_name="/score"
    )
    assert status.startswith("error: i2t: ") and "have no ranked list" in status and raw == "{}"
    assert "\n" not in status


def test_browser_loads_the_example_scores_it_and_shows_the_table(server, app, tmp_path):
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: apt-get install -y chromium"
    example = json.loads(app.EXAMPLE)
    expected = Metrics().compute_all_metrics(
        {int(k): v for k, v in example["i2t"].items()},
        {int(k): v for k, v in example["t2i"].items()},
        partial=True,
    )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(60_000)
            page.goto(server)
            page.get_by_role("button", name="Load the small example").click()
            page.wait_for_function("document.querySelector('#pasted textarea').value.includes('184791')")
            page.get_by_role("button", name="Score", exact=True).click()
            page.locator("#status").get_by_text(re.compile("scored 2 i2t queries")).wait_for()
            page.screenshot(path=str(tmp_path / "space.png"), full_page=True)
            rows = page.locator("#results [role=row]")  # gradio's Dataframe is an ARIA grid
            cells = [rows.nth(i).locator("[role=gridcell]").all_inner_texts() for i in range(rows.count())]
            texts = [[c.strip() for c in row] for row in cells]
        finally:
            browser.close()
    cells = {row[0]: row[1:] for row in texts if row and row[0]}
    assert set(cells) == set(expected)
    for name, by_dir in expected.items():
        assert [float(c) for c in cells[name]] == [round(100 * by_dir[d], 2) for d in ("i2t", "t2i")]
    assert (tmp_path / "space.png").stat().st_size > 10_000


if __name__ == "__main__":  # serve the app by hand: python tests/test_space.py
    sys.exit(load_app().build().launch())
