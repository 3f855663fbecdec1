"""The one reader of built dataset configs: ``data/<config>/*.parquet`` of a local folder or of a Hub dataset repo.

A *source* is a folder written by ``eccv-caption build`` or the id of a Hub
dataset repo it was pushed to (read through huggingface_hub's ``HfFileSystem``,
only the columns asked for). pyarrow and huggingface_hub are imported on use.
"""

from __future__ import annotations

from pathlib import Path

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import HubReadError


def is_built_folder(source: str | Path | None, config: str) -> bool:
    """Whether ``source`` is a local folder holding the config ``config``."""
    return source is not None and (Path(source) / "data" / config).is_dir()


def config_files(source: str | Path, config: str, token: str | None = None) -> tuple[list[str], object]:
    """(Parquet files of one config, the file system to read them with: None for local files)."""
    local = Path(source)
    if local.is_dir():
        return sorted(str(p) for p in (local / "data" / config).glob("*.parquet")), None
    if local.exists() or str(source).count("/") != 1:
        raise EvaluationError(f"{source}: neither a folder built by `eccv-caption build` nor a Hub dataset repo id")
    from huggingface_hub import HfFileSystem

    fs = HfFileSystem(token=token)
    try:
        return sorted(fs.glob(f"datasets/{source}/data/{config}/*.parquet")), fs
    except Exception as exc:  # network, authentication or a missing repo: one line, what to pass instead
        raise HubReadError(f"{source}: cannot read the Hub dataset repo ({_said(exc)})") from None


def read_config(source: str | Path, config: str, columns: list[str], token: str | None = None):  # noqa: ANN201
    """The ``columns`` of a config as a pyarrow Table, or None when the source has no such config. A Hub repo that
    cannot be read (the network, a refused token) is a :class:`~eccv_metric.core.errors.HubReadError`: no verdict
    on the data."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files, fs = config_files(source, config, token)
    if not files:
        return None
    if fs is None:
        return pq.ParquetDataset(files).read(columns=columns)
    try:
        return pq.ParquetDataset(files, filesystem=fs).read(columns=columns)
    except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError) as exc:  # files the Hub served whole: not Parquet of it
        raise EvaluationError(f"{source}: data/{config} cannot be read ({_said(exc)})") from None
    except Exception as exc:  # the Hub stopped answering mid-read
        raise HubReadError(f"{source}: cannot read data/{config} from the Hub dataset repo ({_said(exc)})") from None


def _said(exc: BaseException) -> str:
    """An error's type and the first line of its message (the Hub's answers run over several lines)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__
