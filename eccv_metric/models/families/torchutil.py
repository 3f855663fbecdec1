"""What every torch family shares, so that an adapter holds only its library's calls: the extra, the device
(CUDA, then MPS, then CPU), the precision (autocast on a GPU, always ``torch.inference_mode``), loading (a
Hub that cannot be reached is told at once; the library's errors become one line), the weights digest and
the identity, and the :class:`~eccv_metric.models.families.encoder.Encoder` built from the adapter's two functions.

Imported by the family modules; torch itself is imported inside the functions, after the extra is known to
be installed.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eccv_metric.core.about import install_extra
from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.encoding.text_batches import default_text_batch_size
from eccv_metric.models.encoding.workers import start_early
from eccv_metric.models.families.encoder import FunctionEncoder
from eccv_metric.models.families.identity import configs_digest
from eccv_metric.models.families.registry import FAMILIES
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.registry import require
from eccv_metric.models.families.weights import files_identity
from eccv_metric.models.families.weights import hub_folder
from eccv_metric.models.families.weights import record_main

EXTRA = install_extra("models")
PRECISIONS = {"fp32": None, "fp16": "float16", "bf16": "bfloat16"}
HUB_TIMEOUT = 5.0  # seconds for the one request that tells whether the Hub can be reached


def pick_device(device: str | None) -> str:
    """``device`` as given (checked), else CUDA, then MPS, then CPU."""
    torch = require("torch", EXTRA)
    if device:
        try:
            torch.empty(0, device=device)
        except (RuntimeError, AssertionError) as exc:
            raise EvaluationError(f"device= {device} is not usable here ({str(exc)[:100]}); try cpu") from None
        return device
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def check_precision(precision: str, device: str) -> str:
    if precision not in PRECISIONS:
        raise EvaluationError(f"precision= must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision != "fp32" and device.split(":")[0] == "cpu":
        raise EvaluationError(f"precision= {precision} (autocast) is for a GPU; on cpu use fp32")
    return precision


def autocast(device: str, precision: str) -> Any:
    """``torch.autocast`` in fp16 / bf16 on a GPU, else nothing; always under ``torch.inference_mode``."""
    torch = require("torch", EXTRA)
    stack = contextlib.ExitStack()
    stack.enter_context(torch.inference_mode())
    if PRECISIONS.get(precision):
        stack.enter_context(torch.autocast(device.split(":")[0], dtype=getattr(torch, PRECISIONS[precision])))
    return stack


def pinned(tensor: Any, device: str) -> Any:
    """A host tensor in pinned memory when it is bound for a CUDA device (its copy then need not block)."""
    if device.startswith("cuda") and not tensor.is_pinned():
        return tensor.pin_memory()
    return tensor


def to_device(tensor: Any, device: str) -> Any:
    """``tensor`` on ``device``; from pinned memory without blocking the host (the stream keeps the order)."""
    return tensor.to(device, non_blocking=True)


def weights_digest(module: Any) -> str:
    """sha256 of a torch module's state dict (names, dtypes, shapes, values): what identifies its weights."""
    torch = require("torch", EXTRA)
    h = hashlib.sha256()
    for name, tensor in module.state_dict().items():
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def start_workers_early(models: Sequence[object], options: LoadOptions) -> None:
    """The image workers' fork server started as the first :class:`Loading` of ``models`` would start it, but
    now: a sweep reads its models' image preprocessing before any loads
    (:func:`~eccv_metric.models.families.spec.image_key` imports their libraries), and the server's own imports
    should run beside that, not after it (measured on two tiny models, forced fork server, 2 cores: the first
    image batch waited 2.3 s, 1.0 s when a single model's load started the server). Preloads every listed
    family's ``worker_modules``. Nothing when no model is a spec of a family that encodes images,
    ``workers=0``, or torch is not installed (the load then says so)."""
    found = [FAMILIES.get(str(m).partition(":")[0]) for m in models if isinstance(m, str)]
    families = [f for f in found if f is not None and "image" in f.modalities]
    if not families or options.workers == 0 or importlib.util.find_spec("torch") is None:
        return
    modules = tuple(dict.fromkeys(m for f in families for m in f.worker_modules))
    start_early(pick_device(options.device), options.workers, modules)


class Loading:
    """Where a family loads its model: the device and precision checked, and whether only the local cache can
    be read (:func:`hub_unreachable`); :meth:`errors` turns the library's errors into one line. Once the
    device is known, the image workers' fork server starts (:func:`~eccv_metric.models.encoding.workers.start_early`;
    ``worker_modules``: what unpickling the family's image preprocessing imports)."""

    def __init__(
        self, spec: str, name: str, options: LoadOptions, from_hub: bool = True, worker_modules: tuple[str, ...] = ()
    ):
        if from_hub:
            require_folder(spec, name)
        require("torch", EXTRA)
        self.spec = spec
        self.device = pick_device(options.device)
        start_early(self.device, options.workers, worker_modules)  # image workers' fork server, beside the load
        self.precision = check_precision(options.precision, self.device)
        self.batch_size = options.batch_size
        self.text_batch_size = options.text_batch_size or default_text_batch_size(self.device)
        self.digests = options.digests
        self.unreachable = hub_unreachable(name) if from_hub else None
        self.local_only = self.unreachable is not None

    @contextlib.contextmanager
    def errors(self, *kinds: type[BaseException], cache_read: bool = True) -> Iterator[None]:
        """Inside: the library loads; an error of ``kinds`` (default: OSError, ValueError) is one line."""
        caught = kinds or (OSError, ValueError)
        try:
            yield
        except caught as exc:
            raise load_error(self.spec, exc, self.unreachable, cache_read) from None

    def autocast(self) -> Any:
        return autocast(self.device, self.precision)

    def identity(
        self,
        model: Any,
        library: str,
        preprocessing: dict,
        class_name: str | None = None,
        weights_folder: Path | None = None,
        weights_recursive: bool = True,
        revision: str | None = None,
    ) -> dict:
        """What identifies a loaded torch model (the cache key's model part, the provenance): spec, library and
        version, class, weights digest (of the weight files in ``weights_folder``; none there: of the tensors),
        configs, preprocessing, and the Hub commit it was loaded at."""
        weights = files_identity(weights_folder, self.digests, weights_recursive) or {
            "weights": weights_digest(model),
            "weights_from": "tensors",
        }
        identity = {
            "spec": self.spec,
            "library": library,
            "class": class_name or type(model).__name__,
            **weights,
            "config": configs_digest(model),  # what the weight files leave out (layer norms, activations, ...)
            "preprocessing": preprocessing,
        }
        if revision is not None:
            identity["revision"] = revision
        return identity

    def encoder(
        self,
        model: Any,
        library: str,
        preprocessing: dict,
        texts: Callable[[list[str]], Any] | None = None,
        images: Callable[[Any], Any] | None = None,
        prepare_image: Callable[[Any], Any] | None = None,
        class_name: str | None = None,
        **extra: Any,
    ) -> FunctionEncoder:
        """The encoder of a loaded torch model: kinds from the functions given, the identity (spec, library
        and version, class, weights digest, preprocessing, revision), device and precision; ``extra``: the
        encoder's other fields (``similarity``, ``batches_itself``, ...), ``revision``, and ``weights_folder``
        (with ``weights_recursive``): the folder whose weight files identify the weights
        (:mod:`eccv_metric.models.families.weights`; None or no file there: the tensors are hashed)."""
        kinds = tuple(kind for kind, fn in (("image", images), ("caption", texts)) if fn is not None)
        folder, recursive = extra.pop("weights_folder", None), extra.pop("weights_recursive", True)
        revision = extra.pop("revision", None)
        identity = self.identity(model, library, preprocessing, class_name, folder, recursive, revision)
        return FunctionEncoder(
            self.spec, kinds, texts, images, prepare_image, identity, device=self.device, precision=self.precision,
            **extra,
        )  # fmt: skip


def require_folder(spec: str, name: str) -> None:
    """A model name that reads as a path (absolute, ``./``, ``../``, ``~``, a backslash, more than one ``/``) must
    be a folder that exists: the libraries would take it for a Hub repo id and answer "Repo id must be in the
    form ...", which says nothing of the folder."""
    if Path(name).exists():
        return
    if name.startswith(("/", "./", "../", "~")) or "\\" in name or name.count("/") > 1:
        raise EvaluationError(
            f"{spec}: no such folder or file: {name} (nor a Hub repo id, which is <owner>/<name>): give the folder "
            "that holds the model's files, or its repo id"
        )


def hub_unreachable(name: str) -> str | None:
    """Why the Hugging Face Hub cannot be reached for the Hub name ``name`` (one request, no retries), else None
    (a local folder, offline mode: ``HF_HUB_OFFLINE=1``, or a Hub that answers). The libraries' own download
    retries for half a minute or more on a connection error; with this answer the adapters read the local
    cache only (``local_files_only``) and fail at once when the model is not there."""
    if Path(name).exists():
        return None
    import huggingface_hub
    from huggingface_hub import constants

    if huggingface_hub.is_offline_mode():
        return None
    try:
        huggingface_hub.get_session().head(constants.ENDPOINT, timeout=HUB_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - see unreachable_error
        if unreachable_error(exc):
            return f"cannot reach the Hugging Face Hub at {constants.ENDPOINT} ({type(exc).__name__})"
    return None


def main_commit(name: str, ask: bool = True, probes: tuple[str, ...] = ("config.json",)) -> str | None:
    """The commit a load of the Hub model ``name`` reads now: the Hub's answer for the first of its ``probes``
    files it has (the request the library makes first; recorded as the cache's ``main`` ref), or (``ask=False``,
    offline mode ``HF_HUB_OFFLINE=1``, a Hub that cannot be reached) the local cache's ``main`` ref; None for a
    local folder, a Hub that refuses (no such repo or file, a gated repo: the load says why) or a model not
    cached. A load pinned to it records it (the identity's ``revision``) and reads that commit's snapshot
    however ``main`` moves meanwhile."""
    if Path(name).exists() or name.count("/") != 1:
        return None
    import huggingface_hub

    if ask and not huggingface_hub.is_offline_mode():
        for probe in probes:
            try:
                url = huggingface_hub.hf_hub_url(name, probe)
                commit = huggingface_hub.get_hf_file_metadata(url, timeout=HUB_TIMEOUT).commit_hash
            except Exception as exc:  # noqa: BLE001 - see unreachable_error
                if unreachable_error(exc):
                    break  # the local ref, which the load then reads
                continue  # a refusal: the next probe (a repo without that file), else None
            if commit:
                record_main(name, commit)  # the load reads it by its hash, which leaves no ref for offline runs
            return commit or None
        else:
            return None
    found = hub_folder(name, probes=probes)
    return found.name if found is not None else None


def snapshot(
    name: str, commit: str | None, probes: tuple[str, ...] = ("config.json",)
) -> tuple[Path, str | None] | None:
    """A family's ``folder`` (:mod:`eccv_metric.models.cache.recall`): a local folder as it is; a Hub model's snapshot
    of ``commit`` (the one a load read), else of the commit a load would read now (:func:`main_commit`); None
    where that snapshot is not on this machine or the Hub refuses."""
    if Path(name).is_dir():
        return Path(name), None
    commit = commit or main_commit(name, probes=probes)
    found = hub_folder(name, commit, probes) if commit else None
    return (found, found.name) if found is not None else None


def unreachable_error(exc: BaseException) -> bool:
    """Whether ``exc`` says the Hub could not be reached: the HTTP client's transport errors (httpx or
    requests) or a socket error, not an answer of the Hub (huggingface_hub's HfHubHTTPError is an OSError)."""
    kinds = {c.__name__ for c in type(exc).__mro__}
    if kinds & {"HfHubHTTPError", "HTTPStatusError"}:
        return False
    return bool(kinds & {"TransportError", "RequestException", "OSError", "TimeoutException"})


def load_error(spec: str, exc: BaseException, unreachable: str | None, cache_read: bool = True) -> EvaluationError:
    """The one error line of a model that did not load: what the library said, or (Hub unreachable) what to do;
    ``cache_read``: the local cache was tried (the model is not there)."""
    if unreachable is not None:
        tried = " and the model is not in the local cache" if cache_read else ""
        return EvaluationError(
            f"{spec}: {unreachable}{tried}: connect, set HF_HUB_OFFLINE=1 to use cached models only, or give a "
            "local folder"
        )
    return EvaluationError(f"{spec}: cannot load the model ({str(exc).splitlines()[0][:160] if str(exc) else ''})")
