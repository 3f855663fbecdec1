"""huggingface_hub pointed at the fake Hub in this process, for CLI calls made in-process (``main([...])``) rather than
in a fresh interpreter: the environment :meth:`FakeHub.client_env` gives a subprocess, and the values huggingface_hub
read from it when it was imported (``constants.ENDPOINT`` and its URL template, the cache, the token file, offline
and Xet switches), each restored by ``monkeypatch`` after the test."""

from __future__ import annotations

import os
from pathlib import Path

from tests.integration.fake_hub import FakeHub

CLEARED = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


def point_at(hub: FakeHub, home: Path, monkeypatch: object, token: str | None = "hf_me") -> None:
    """This process's huggingface_hub talks to ``hub`` (caches under ``home``), with ``token`` (None: no token)."""
    import huggingface_hub.constants as constants
    from huggingface_hub import HfFileSystem

    env = hub.client_env(home, base={})
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)  # type: ignore[attr-defined]
    for name, value in env.items():
        monkeypatch.setenv(name, value)  # type: ignore[attr-defined]
    if token is not None:
        monkeypatch.setenv("HF_TOKEN", token)  # type: ignore[attr-defined]
    values = {
        "ENDPOINT": hub.url,
        "HUGGINGFACE_CO_URL_TEMPLATE": hub.url + "/{repo_id}/resolve/{revision}/{filename}",
        "HF_HUB_CACHE": str(Path(env["HF_HOME"]) / "hub"),
        "HF_TOKEN_PATH": str(Path(env["HF_HOME"]) / "token"),
        "HF_STORED_TOKENS_PATH": str(Path(env["HF_HOME"]) / "stored_tokens"),
        "HF_HUB_OFFLINE": False,
        "HF_HUB_DISABLE_XET": True,
        "HF_HUB_DISABLE_IMPLICIT_TOKEN": True,
    }
    for name, value in values.items():
        monkeypatch.setattr(constants, name, value)  # type: ignore[attr-defined]
    HfFileSystem.clear_instance_cache()  # an instance made for another test's endpoint
    os.makedirs(values["HF_HUB_CACHE"], exist_ok=True)


def offline(monkeypatch: object) -> None:
    """No network: the endpoint a closed local port (connections refused at once)."""
    import socket

    import huggingface_hub.constants as constants
    from huggingface_hub import HfFileSystem

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    monkeypatch.setattr(constants, "ENDPOINT", closed)  # type: ignore[attr-defined]
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", closed + "/{repo_id}/resolve/{revision}/{filename}")  # type: ignore[attr-defined]
    monkeypatch.setenv("HF_ENDPOINT", closed)  # type: ignore[attr-defined]
    HfFileSystem.clear_instance_cache()
