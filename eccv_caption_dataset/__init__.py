"""Build the ECCV Caption dataset (images, captions, categories, COCO/CxC/ECCV/PM positives) for the Hub.

``EccvCaption``, ``EccvCaptionConfig`` and ``build`` load the ``datasets`` library, so they are imported when
first used (PEP 562): ``eccv_caption_dataset.sources`` (what the CLI's help reads) stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from eccv_caption_dataset.push import push

if TYPE_CHECKING:
    from eccv_caption_dataset.builder import EccvCaption
    from eccv_caption_dataset.builder import EccvCaptionConfig
    from eccv_caption_dataset.hub_folder import build

__all__ = ["EccvCaption", "EccvCaptionConfig", "build", "push"]
LAZY = {"EccvCaption": "builder", "EccvCaptionConfig": "builder", "build": "hub_folder"}


def __getattr__(name: str) -> object:
    if name not in LAZY:
        raise AttributeError(f"module 'eccv_caption_dataset' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"eccv_caption_dataset.{LAZY[name]}"), name)
    globals()[name] = value
    return value
