"""How a model run goes: :class:`RunOptions` (the keywords of :func:`~eccv_metric.models.run.evaluate_model` beside
the model, the data, the request and the output folder) and :class:`ModelResults` (what a run returns)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from eccv_metric.api.chance import outside_frames
from eccv_metric.benchmarks.request import Request
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.errors import EvaluationError
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.measures.results import Results
from eccv_metric.models.cache.entries import cache_root
from eccv_metric.models.cache.folder import CacheFolder
from eccv_metric.models.cache.store import EmbeddingStore
from eccv_metric.models.data.digests import FileDigests
from eccv_metric.models.data.items import ItemSet
from eccv_metric.models.data.source import DataSource
from eccv_metric.models.data.source import data_sources
from eccv_metric.models.encoding.decode import DECODERS
from eccv_metric.models.encoding.decode import Decoder
from eccv_metric.models.encoding.text_batches import default_text_batch_size
from eccv_metric.models.encoding.workers import default_workers
from eccv_metric.models.families.encoder import Encoder
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.pairs.options import PairOptions
from eccv_metric.models.parallel.world import Shard

REFERENCES = ("original", "lavis", "transformers")  # whose code a pair scorer follows where its library's port differs
# the keywords of a model that scores pairs: a dual encoder uses none of them
PAIR_KEYWORDS = ("protocol", "rerank_k", "score_rule", "coco_1k", "first_stage", "max_pairs", "pair_batch_size",
                 "text_length", "reference")  # fmt: skip


class NotUsedWarning(UserWarning):
    """Something a model run was given or asked for and did not use: a keyword that does nothing for this model or
    protocol (``rerank_k=`` with a dual encoder, or under ``protocol="exhaustive"``), a pair scorer whose pair head
    scored no pair (every benchmark asked for is scored by its first stage)."""


NotUsedWarning.__module__ = "eccv_metric.models"


@dataclass
class Scored:
    """One engine call of a run: its ``name`` (the item group, and for a pair scorer what scored it: ``coco.rerank``),
    the ``source`` the engine scored (the evidence a run keeps: :mod:`eccv_metric.evidence.layout`),
    ``benchmarks`` (``{benchmark: metric names}`` it scored) and ``sets`` (``{kind: ItemSet}``: the items of its
    rows, for re-encoding)."""

    name: str
    source: object
    benchmarks: dict[str, list[str]]
    sets: dict[str, ItemSet] = field(default_factory=dict)


def scoring_record(request: Request) -> dict:
    """How the engine scored a run beside the metric names (the CxC bootstrap's samples and seed): the provenance's
    ``scoring``, what scoring it again takes."""
    return {"n_resamples": request.n_resamples, "seed": request.seed}


@dataclass
class ModelResults:
    """What :func:`~eccv_metric.models.run.evaluate_model` returns: the numbers, where they come from, what was
    skipped and why, and what the engine scored (``inputs``: one :class:`Scored` per engine call). ``scored`` False:
    a process that computed its share of a run and left the numbers to another (a torchrun rank other than 0, a
    ``shard=`` job): ``results`` is empty, ``provenance`` says what it did."""

    results: Results
    provenance: dict
    skipped: dict[str, str] = field(default_factory=dict)
    embeddings: dict[str, Embeddings] = field(default_factory=dict)
    scored: bool = True
    inputs: list[Scored] = field(default_factory=list)  # what the engine scored, call by call (the run's evidence)


@dataclass
class RunOptions:
    """How a model run goes, checked when made (one error naming the keyword).

    ``skip_unavailable``: a benchmark that cannot be scored is skipped with its reason (else an error).
    ``images``: folders / zips (or one) with the pixels a build does not embed (COCO val2014, unlabeled2017,
    Flickr30K). ``resources``: the ground truth (default: the data's own, where ``resource_options`` (a
    :class:`~eccv_metric.benchmarks.resource_options.ResourceOptions`) names none). ``device`` / ``precision`` /
    ``batch_size`` (images) / ``text_batch_size`` (captions, cut in length order; default 1024 on CUDA, 256 on a
    CPU) / ``workers`` (image decoding processes; default: cores - 1 on a GPU, cores up to 8 on a CPU): how the
    model runs. ``decode``: ``pil`` (PIL in the workers) or ``gpu`` (opt-in: nvJPEG and the model's
    preprocessing on the CUDA device, :mod:`eccv_metric.models.encoding.decode`; slightly different pixels, so its
    own cache entries). ``cache``: reuse and keep embeddings (and pair scores) under ``cache_dir`` (default: the
    Hugging Face cache). ``token``: a private Hub repo's.

    A model that scores pairs (:mod:`eccv_metric.models.pairs`): ``protocol`` (``rerank`` or ``exhaustive``),
    ``rerank_k``, ``score_rule`` (``itm`` or ``itm+itc``), ``coco_1k`` (``restrict`` or ``within``),
    ``first_stage`` (a dual encoder spec or object ranking before a rerank), ``max_pairs`` (the pairs a run
    scores unless asked for more), ``pair_batch_size`` (pairs per forward pass): see
    :mod:`eccv_metric.models.pairs.options` (None: its default); ``text_length`` (a caption's length in the unit of
    the code the scorer follows: BLIP's 30 words, LAVIS's 50; None: that code's) and ``reference`` (None or
    ``original``: the model's own code where its library's port differs, e.g. BLIP's ``[ENC]`` token; ``lavis``:
    LAVIS's where it differs from the model's own, BLIP's captions cut at 50 words; ``transformers``: the port):
    :mod:`eccv_metric.models.families.heads.registry`. A keyword of these given to a model or protocol that does not
    use it is said to do nothing (:class:`NotUsedWarning`), or refused where it can only be a mistake
    (:meth:`unused`). ``shard``: ``"i/N"`` (this job does its share of the blocks and stops; a run without it
    scores: :mod:`eccv_metric.models.parallel.world`).
    """

    skip_unavailable: bool = False
    images: Iterable[str | Path] | str | Path | None = None
    resources: Resources | None = None
    resource_options: ResourceOptions | None = None
    device: str | None = None
    precision: str = "fp32"
    batch_size: int = 64
    text_batch_size: int | None = None
    workers: int | None = None
    decode: str = "pil"
    cache: bool = True
    cache_dir: str | Path | None = None
    token: str | None = None
    protocol: str | None = None
    rerank_k: int | None = None
    score_rule: str | None = None
    coco_1k: str | None = None
    first_stage: object = None
    max_pairs: int | None = None
    pair_batch_size: int | None = None
    text_length: int | None = None
    reference: str | None = None
    shard: object = None
    cache_folder: CacheFolder | None = field(default=None, init=False, repr=False)  # made by source()
    sweep: bool = field(default=False, init=False, repr=False)  # one model of several (evaluate_models)

    def __post_init__(self) -> None:
        for name in ("batch_size", "text_batch_size", "workers"):
            value, least = getattr(self, name), 0 if name == "workers" else 1
            if value is None and name != "batch_size":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                what = "an integer >= 0" if least == 0 else "a positive integer"
                raise EvaluationError(f"{name}= must be {what}, not {value!r:.20}")
        if self.decode not in DECODERS:
            raise EvaluationError(f"decode= must be one of {', '.join(DECODERS)}, not {self.decode!r:.20}")
        self.pairs = PairOptions(self.protocol, self.rerank_k, self.score_rule, self.coco_1k, self.first_stage,
                                 self.max_pairs, self.pair_batch_size)  # fmt: skip
        # the keywords of a model that scores pairs given here (what a run whose model ignores them names)
        self.given = self.pairs.given + tuple(n for n in ("text_length", "reference") if getattr(self, n) is not None)
        self.reference = "original" if self.reference is None else self.reference
        if self.shard is not None:
            self.shard = Shard.parse(self.shard)
        if self.reference not in REFERENCES:
            raise EvaluationError(f"reference= must be one of {', '.join(REFERENCES)}, not {self.reference!r:.30}")
        if self.text_length is not None and (
            not isinstance(self.text_length, int) or isinstance(self.text_length, bool) or self.text_length < 1
        ):
            raise EvaluationError(f"text_length= must be a positive integer, not {self.text_length!r:.20}")

    def unused(self, names: Iterable[str], why: str, refuse: Iterable[str] = ()) -> None:
        """Say that the keywords of ``names`` given to this run do nothing here (``why``: the reason, naming the
        model): one error when one of them is in ``refuse`` (a keyword that can only be a mistake: a score rule for
        a model without one) and the run is not one model of a sweep (another model may use it), else one
        :class:`NotUsedWarning`. Nothing for keywords left at their defaults."""
        given = [name for name in names if name in self.given]
        if not given:
            return
        what = f"{', '.join(f'{name}=' for name in given)} {'does' if len(given) == 1 else 'do'} nothing: {why}"
        if not self.sweep and set(given) & set(refuse):
            raise EvaluationError(f"{what}; drop {'it' if len(given) == 1 else 'them'}")
        warnings.warn(what, NotUsedWarning, stacklevel=outside_frames())

    def unused_by_encoder(self, spec: str) -> None:
        """The keywords of a model that scores pairs, given to a dual encoder's run: a score rule, a first stage and a
        rerank protocol are refused (the user expects a pair head that never runs), the others said to do nothing."""
        refuse = ("score_rule", "first_stage", *(("protocol",) if self.protocol == "rerank" else ()))
        why = (
            f"{spec} is a dual encoder, which ranks every item by its embeddings (these are options of a model that "
            "scores pairs: its rerank, score rule and pair batches)"
        )
        self.unused(PAIR_KEYWORDS, why, refuse)

    def source(self, data: str | Path) -> DataSource:
        """The run's items: ``data`` with these ``images`` and ``token``, its files' digests remembered under
        the cache (also the model's weight files'). First of a run: the cache's folder is checked (one error
        naming it when it is a file or cannot be made) and made (:attr:`folder`)."""
        if self.root is not None:
            self.cache_folder = CacheFolder(self.root)
            self.cache_folder.check()
        return DataSource(data, self.images, self.token, FileDigests(self.folder))

    def load(self, digests: FileDigests) -> LoadOptions:
        """How the model loads (``digests``: the run's file-digest memo, for its weight files)."""
        return LoadOptions(self.device, self.precision, self.batch_size, self.text_batch_size, digests, self.workers,
                           text_length=self.text_length, reference=self.reference)  # fmt: skip

    def store(self, encoder: Encoder, decoder: Decoder | None) -> EmbeddingStore:
        """The store of ``encoder``'s embeddings in this run (workers and caption batches by its device unless
        given)."""
        return EmbeddingStore(encoder, self.folder, self.batch_size, self.workers_for(encoder.device),
                              self.text_batch_size or default_text_batch_size(encoder.device), decoder)  # fmt: skip

    def workers_for(self, device: str) -> int:
        """Image decoding processes for a model on ``device`` (given, or by the device)."""
        return default_workers(device) if self.workers is None else self.workers

    def resources_record(self, source: DataSource) -> dict:
        """The ground truth's options, the sources given and those taken from ``source``'s build
        (:meth:`ResourceOptions.record`), for the provenance."""
        options = self.resource_options or ResourceOptions()
        return options.record(self.resources is not None, data_sources(source) if self.resources is None else [])

    @property
    def root(self) -> Path | None:
        """The embedding cache's folder (None: no cache)."""
        if not self.cache:
            return None
        return Path(self.cache_dir) if self.cache_dir is not None else cache_root()

    @property
    def folder(self) -> CacheFolder | None:
        """The cache's folder as this run (or sweep: one warning for all its models) writes it; None: no cache."""
        if self.root is None:
            return None
        if self.cache_folder is None:
            self.cache_folder = CacheFolder(self.root)
        return self.cache_folder
