"""Items the ECCV Caption paper left out of its benchmark, stated as the paper lists them.

Chun, Kim, Park, Chang, Oh. "ECCV Caption: Correcting False Negatives by
Collecting Machine-and-Human-verified Image-Caption Associations for MS-COCO",
ECCV 2022, arXiv:2204.03359v5, appendix C.1: COCO caption ids removed as
invalid (18 meaningless, 14 semantically wrong), and one test image left out
because it duplicates training images. The built dataset flags them in
``removed_in_eccv`` (captions and images configs).
"""

from __future__ import annotations

MEANINGLESS_CAPTIONS = (
    607516, 607486, 433639, 248212, 469834, 462530, 469102, 743575, 246706,
    61717, 500797, 19273, 630298, 576409, 390637, 296557, 450553, 44809,
)  # fmt: skip
WRONG_CAPTIONS = (
    610564, 359139, 218995, 609235, 143250, 375316, 712683,
    75083, 625605, 620511, 613949, 129825, 605566, 634829,
)  # fmt: skip
REMOVED_CAPTIONS = frozenset(MEANINGLESS_CAPTIONS + WRONG_CAPTIONS)
# COCO_val2014_000000578492.jpg duplicates the training images 388662 and 397819
REMOVED_IMAGES = frozenset({578492})
