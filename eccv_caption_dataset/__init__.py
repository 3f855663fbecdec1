"""Build the ECCV Caption dataset (images, captions, categories, COCO/CxC/ECCV/PM positives) for the Hub."""

from eccv_caption_dataset.builder import EccvCaption
from eccv_caption_dataset.builder import EccvCaptionConfig
from eccv_caption_dataset.hub_folder import build
from eccv_caption_dataset.push import push

__all__ = ["EccvCaption", "EccvCaptionConfig", "build", "push"]
