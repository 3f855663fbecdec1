"""Hub repo ids and the Hub's failures, each on one line naming the repo and the next step.

Shared by ``eccv-caption push`` (the dataset and the Space), ``push-results`` and ``leaderboard --from-hub``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import HubReadError

# the Hub's rule for each half of "<owner>/<name>" (huggingface_hub.utils.validate_repo_id), owner required
_REPO_PART = re.compile(r"(?!.*(--|\.\.))\w(?:[\w.-]{0,94}\w)?", re.ASCII)
NETWORK_STEP = "check the network connection (and HF_ENDPOINT, HF_HUB_OFFLINE)"
TOKEN_STEP = "log in with `hf auth login` or set HF_TOKEN to a token with write access"
READ_STEP = "log in with `hf auth login`"  # a read the Hub refused: a private or gated repo
T = TypeVar("T")


def is_repo_id(text: object) -> bool:
    """Whether ``text`` is ``<owner>/<name>`` with the Hub's characters."""
    if not isinstance(text, str):
        return False
    parts = text.split("/")
    return len(parts) == 2 and all(_REPO_PART.fullmatch(part) for part in parts) and not text.endswith(".git")


def check_repo_id(repo: str, keyword: str, example: str) -> None:
    """``<owner>/<name>`` with the Hub's characters; a name without its owner would be created in whichever
    account the token belongs to, so it is refused, as is anything else the Hub would reject."""
    if not is_repo_id(repo):
        raise EvaluationError(
            f"{keyword}= {repo!r} is not a Hub repo id: give <owner>/<name> (letters, digits, '-', '_', '.'), "
            f"e.g. {example}"
        )


def from_the_hub(exc: BaseException) -> bool:
    """An HTTP answer of the Hub, or no answer at all (huggingface_hub's errors and its HTTP client's: httpx)."""
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.errors import LocalEntryNotFoundError

    module = type(exc).__module__.split(".")[0]
    kinds = HfHubHTTPError | LocalEntryNotFoundError | ConnectionError | TimeoutError  # no answer, nothing cached
    return isinstance(exc, kinds) or module in ("httpx", "httpx2")


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of a Hub answer; None when the Hub did not answer."""
    return getattr(getattr(exc, "response", None), "status_code", None)


def first_line(exc: BaseException) -> str:
    """The first line of what the Hub said (its own message where huggingface_hub kept it), else of the error."""
    server = getattr(exc, "server_message", None)
    text = server if isinstance(server, str) and server.strip() else str(exc)
    return (text.strip().splitlines() or [type(exc).__name__])[0]


def briefly(exc: BaseException) -> str:
    """A failure in a few words: the Hub's status (or its first line when it did not answer), any other error's
    type and first line."""
    if from_the_hub(exc):
        return str(status_of(exc) or first_line(exc))
    return f"{type(exc).__name__}: {first_line(exc)}"


def hub_failure(
    exc: BaseException,
    what: str,
    again: str,
    refused: str = TOKEN_STEP,
    answered: str = "check the repo id and your rights to it",
) -> str:
    """One line: what failed, why, and the next step (a traceback of the HTTP client helps nobody here).

    ``refused``: the step when the Hub refuses the token (401 / 403); ``answered``: for any other answer;
    ``again``: how to retry (``push again``)."""
    from huggingface_hub import constants
    from huggingface_hub.errors import LocalEntryNotFoundError

    status = status_of(exc)
    if isinstance(exc, LocalEntryNotFoundError):  # huggingface_hub's word for no answer (or offline mode), no copy
        offline = " (HF_HUB_OFFLINE is set)" if constants.HF_HUB_OFFLINE else ""
        why, step = f"could not reach the Hub at {constants.ENDPOINT}{offline} and no copy is cached", NETWORK_STEP
    elif status in (401, 403):
        why, step = f"the Hub refused the token ({status}: {first_line(exc)})", refused
    elif status is not None:
        why, step = f"the Hub answered {status}: {first_line(exc)}", answered
    else:
        why = f"could not reach the Hub at {constants.ENDPOINT} ({type(exc).__name__}: {first_line(exc)})"
        step = NETWORK_STEP
    return f"{what} failed: {why}; {step}, then {again}"


def hub_call(what: str, call: Callable[[], T], again: str) -> T:
    """``call()`` (a read of the Hub) with the Hub's failures as one line (:class:`HubReadError`): what failed, why,
    the next step and how to retry (``again``: ``run verify again``). Errors of the package (an
    :class:`EvaluationError`) and any other exception pass as they are."""
    try:
        return call()
    except EvaluationError:
        raise
    except Exception as exc:
        if not from_the_hub(exc):
            raise
        raise HubReadError(hub_failure(exc, what, again, refused=READ_STEP)) from None
