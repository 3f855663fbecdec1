"""Progress bars for long steps: one tqdm bar per step on stderr, drawn only when someone is watching.

A bar is drawn when its stream (stderr) is a terminal and the step has lasted
``DELAY`` seconds (short steps never draw, so the fast paths stay silent);
``ECCV_CAPTION_PROGRESS=1`` draws bars on any stream, ``=0`` never;
:func:`configure` (``quiet=True``: the CLI's ``--quiet``) turns every bar off
for the process. Bars only count: they never change a result. Bars are
cleared when their step ends (``leave=False``), so tables printed afterwards
stay clean. :func:`libraries_quiet` (the CLI's ``--quiet`` too) turns the
Hugging Face libraries' own bars off while it lasts.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
import warnings
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from typing import IO
from typing import Any
from typing import TypeVar

T = TypeVar("T")
ENV = "ECCV_CAPTION_PROGRESS"
DELAY = 2.0  # seconds a step runs before its bar is drawn
_LOCK = threading.Lock()
_SETTINGS: dict[str, Any] = {"quiet": False, "file": None, "delay": DELAY}


def configure(quiet: bool | None = None, file: IO[str] | None = None, delay: float | None = None) -> dict[str, Any]:
    """Set the process's progress options; returns the previous ones (``configure(**old)`` restores them).

    ``quiet``: no bars at all. ``file``: the stream bars go to (default: ``sys.stderr`` at the time a bar
    starts). ``delay``: seconds before a bar is drawn.
    """
    with _LOCK:
        old = dict(_SETTINGS)
        if quiet is not None:
            _SETTINGS["quiet"] = bool(quiet)
        if file is not None:
            _SETTINGS["file"] = file
        if delay is not None:
            _SETTINGS["delay"] = float(delay)
    return old


def reset(settings: dict[str, Any]) -> None:
    """Restore options returned by :func:`configure` (``file=None`` included)."""
    with _LOCK:
        _SETTINGS.update(settings)


def quiet() -> bool:
    """Whether the process asked for no progress output (:func:`configure`, the CLI's ``--quiet``)."""
    return bool(_SETTINGS["quiet"])


def _stream() -> IO[str]:
    return _SETTINGS["file"] or sys.stderr


def enabled() -> bool:
    """Whether a bar started now would be drawn (see the module docstring)."""
    if _SETTINGS["quiet"]:
        return False
    forced = os.environ.get(ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    try:
        return bool(_stream().isatty())
    except (AttributeError, ValueError, OSError):  # a closed or unusual stream
        return False


class NoBar:
    """What :func:`bar` returns when no bar is drawn: the same methods, doing nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


_NO_BAR = NoBar()


def bar(desc: str, total: int | None = None, unit: str = "it", unit_scale: bool = False, tick: bool = False) -> Any:
    """A tqdm bar for one step (a context manager with ``update(n)``), or a :class:`NoBar`.

    ``tick``: redraw every second, so the elapsed time moves while one long call runs between updates.
    """
    if not enabled():
        return _NO_BAR
    from tqdm import tqdm

    shown = tqdm(
        total=total,
        desc=desc,
        unit=unit,
        unit_scale=unit_scale,
        unit_divisor=1024 if unit == "B" else 1000,
        delay=_SETTINGS["delay"],
        leave=False,
        file=_stream(),
        dynamic_ncols=True,
        mininterval=0.5,
        bar_format="{desc}: {elapsed}" if total is None and tick else None,
    )
    return Ticking(shown, _SETTINGS["delay"]) if tick else shown


def working(desc: str) -> Any:
    """A bar for one long call that reports nothing while it runs: the step's name and its elapsed time."""
    return bar(desc, tick=True)


class Ticking:
    """A tqdm bar redrawn every second by a thread of its own (after the delay), until it is closed."""

    def __init__(self, shown: Any, delay: float):
        self.shown = shown
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(delay,), name="eccv-progress", daemon=True)
        self._thread.start()

    def _run(self, delay: float) -> None:
        if self._stop.wait(delay):
            return
        while not self._stop.is_set():
            self.shown.refresh()
            self._stop.wait(1.0)

    def update(self, n: int = 1) -> None:
        self.shown.update(n)

    def set_postfix_str(self, text: str) -> None:
        self.shown.set_postfix_str(text)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.shown.close()

    def __enter__(self) -> Ticking:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iterate(
    items: Iterable[T], desc: str, total: int | None = None, unit: str = "it", tick: bool = False
) -> Iterator[T]:
    """``items`` with a bar counting them (``total``: default ``len(items)`` when it has one; ``tick``: see
    :func:`bar`)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with bar(desc, total, unit, tick=tick) as progress:
        for item in items:
            yield item
            progress.update(1)


def above_bars(log: Callable[[str], None]) -> Callable[[str], None]:
    """``log`` wrapped so its lines print above the bars being drawn (not through them)."""

    def write(text: str) -> None:
        if not enabled():
            log(text)
            return
        from tqdm import tqdm

        with tqdm.external_write_mode(file=_stream()):
            log(text)

    return write


@contextlib.contextmanager
def libraries_quiet() -> Iterator[None]:
    """While it lasts, no progress bars from the libraries a run calls; afterwards each as it was.

    huggingface_hub's (downloads, uploads, ``Fetching N files``) and, through them, transformers' (``Loading
    weights``: transformers takes huggingface_hub's setting when it is imported, and is switched itself when
    it already is; sentence-transformers loads through it), and datasets' when it is imported. Only bars: the
    libraries' warnings and errors still print. Importing huggingface_hub's small ``utils`` is all it costs;
    nothing else is imported. Where ``HF_HUB_DISABLE_PROGRESS_BARS=0`` is set, that setting wins, as the
    libraries document.
    """
    hub = importlib.import_module("huggingface_hub.utils.tqdm")
    states = dict(hub.progress_bar_states)  # every group's setting, put back as it was
    before = {name: _bars_on(name) for name in LIBRARY_BARS if name in sys.modules}
    with warnings.catch_warnings():  # an environment variable that wins says so in a warning: not for --quiet
        warnings.simplefilter("ignore")
        hub.disable_progress_bars()
        for name in before:
            _switch(name, False)
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hub.progress_bar_states.clear()
            hub.progress_bar_states.update(states)
            for name in LIBRARY_BARS:  # imported inside: as its import would have set it without this context
                if name in sys.modules:
                    _switch(name, before[name] if name in before else LIBRARY_BARS[name]())
            hub.progress_bar_states.clear()  # transformers' switch also sets huggingface_hub's: put back last
            hub.progress_bar_states.update(states)


def _transformers_default() -> bool:
    """transformers' bars as its import sets them: on unless huggingface_hub's are off."""
    return not importlib.import_module("huggingface_hub.utils").are_progress_bars_disabled()


def _datasets_default() -> bool:
    """datasets' bars as its import sets them: on unless ``HF_DATASETS_DISABLE_PROGRESS_BARS`` is true."""
    return not importlib.import_module("datasets.config").HF_DATASETS_DISABLE_PROGRESS_BARS


LIBRARY_BARS: dict[str, Callable[[], bool]] = {  # the module that holds a library's switch -> its default
    "transformers.utils.logging": _transformers_default,
    "datasets.utils.tqdm": _datasets_default,
}


def _bars_on(name: str) -> bool:
    return bool(sys.modules[name].is_progress_bar_enabled())  # both modules name their switches alike


def _switch(name: str, on: bool) -> None:
    module = sys.modules[name]
    (module.enable_progress_bar if on else module.disable_progress_bar)()
