"""Scorer names -> factories, imported lazily so ``ts2 score --help`` loads no model library.

Adding a scorer is one record in :data:`SCORER_INFO`: ``ScorerInfo("name", "module.path:Factory", default model,
pip extra, outputs)`` (:data:`SCORERS`, name -> factory, is read from it). A factory is called as
``Factory(device=..., **kwargs)`` where ``kwargs`` holds only what the user set: ``model``, ``precision``, options
(``ts2 score ... --option questions=q.csv``), and ``data_dir`` if the factory declares that parameter. It returns an
object following the runner's scorer contract (``scorers.scoring.runner``).
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable

from scorers.errors import ParameterError

__all__ = ["SCORERS", "SCORER_INFO", "ScorerInfo", "build_scorer", "check_scorer_name", "format_scorer_list", "get_factory",
           "list_scorers"]


@dataclass(frozen=True)
class ScorerInfo:
    """One registered scorer: its ``factory`` (``"module.path:Factory"``, imported only when built), what ``ts2 score
    NAME`` runs by default, which pip extra it needs, the columns it writes, and ``tolerance``: how far apart two
    runs of the same configuration may score one image on another device, batch size or library build (absolute, on
    the score's own scale; ``ts2 submit --verify --rescore`` compares within it). Continuous scores of fp32 models
    differ by ~1e-6 between CPU and GPU and ~1e-3 at fp16: 2e-3 on a cosine; scales that multiply a cosine
    (PickScore: x100) scale it; discrete scores (answers, judge ratings) may flip one step where two choices tie."""

    name: str
    factory: str
    default_model: str
    extra: str
    outputs: str
    tolerance: float = 2e-3


#: one record per scorer, in ``ts2 score --list`` order (tests check the default models against the factories' own
#: defaults)
SCORER_INFO: dict[str, ScorerInfo] = {info.name: info for info in (
    ScorerInfo("clip_score", "scorers.metrics.embedding:CLIPScore",
               "openai/clip-vit-base-patch16 (transformers; open_clip with --model ARCH --pretrained TAG)", "models",
               "clip_score: max(cos, 0) of CLIP image/text embeddings (--form)"),
    ScorerInfo("align_score", "scorers.metrics.embedding:ALIGNScore", "kakaobrain/align-base", "models",
               "align_score: max(cos, 0) of ALIGN embeddings"),
    ScorerInfo("siglip_score", "scorers.metrics.embedding:SigLIPScore", "google/siglip-so400m-patch14-384", "models",
               "siglip_score: max(cos, 0); siglip_probability: sigmoid match probability"),
    ScorerInfo("tifa", "scorers.metrics.qga.question_scorers:TIFAScorer",
               "Salesforce/blip-vqa-base (answers) + sentence-transformers/all-mpnet-base-v2 (matching)", "models",
               "tifa: fraction of the TIFA questions answered correctly; per-question records",
               tolerance=0.2),  # one answer in five may flip where two choices tie
    ScorerInfo("dsg", "scorers.metrics.qga.question_scorers:DSGScorer",
               "Salesforce/blip-vqa-base (answers) + sentence-transformers/all-mpnet-base-v2 (matching)", "models",
               "dsg: fraction of DSG questions answered yes whose parents pass; per-question records",
               tolerance=0.2),  # one answer in five may flip where two choices tie
    ScorerInfo("vqa_score", "scorers.metrics.qga.vqascore:VQAScorer",
               "Salesforce/blip-vqa-base (or a served VLM: --model openai:MODEL)", "models",
               "vqa_score: P(yes) to 'Does this figure show \"PROMPT\"?'",
               tolerance=0.01),  # P(yes) of a VQA model at fp16
    ScorerInfo("viescore", "scorers.metrics.judges.viescore:VIEScorer",
               "llava-hf/llava-1.5-7b-hf (or --model openai:MODEL)", "models",
               "viescore: semantic-consistency rating / 10 from a VLM judge (NaN when unreadable)",
               tolerance=0.1),  # one rating step (/10)
    ScorerInfo("llmscore", "scorers.metrics.judges.llmscore:LLMScorer",
               "llava-hf/llava-1.5-7b-hf captions + meta-llama/Llama-3.1-8B-Instruct judge", "models",
               "llmscore_ec: error count (lower is better); llmscore_overall: 1-100 rating (higher is better)",
               tolerance=1.0),  # one error-count step
    # reward / preference models (issue 26); default checkpoints pinned to Hub commits read from public code (pin
    # tables of reward pipelines; for unifiedreward an HF cache snapshot path); not confirmed against the Hub from the
    # offline build machine (see each evaluate module's card)
    ScorerInfo("pickscore", "scorers.metrics.reward_models:PickScore",
               "yuvalkirstain/PickScore_v1 (processor of laion/CLIP-ViT-H-14-laion2B-s32B-b79K)", "models",
               "pickscore: logit_scale.exp() * cos (the official raw scale)",
               tolerance=0.2),  # 100 x the cosine tolerance
    ScorerInfo("hpsv2", "scorers.metrics.reward_models:HPSv2Score",
               "ViT-H-14 with xswu/HPSv2 HPS_v2.1_compressed.pt (--option version=v2.0)", "models",
               "hpsv2: cosine of the HPSv2 image/text embeddings"),
    ScorerInfo("imagereward", "scorers.metrics.reward_models:ImageRewardScore", "THUDM/ImageReward (ImageReward.pt)",
               "models", "imagereward: (head output - mean) / std of the official ImageReward",
               tolerance=0.01),  # a z-scored head output
    ScorerInfo("hpsv3", "scorers.metrics.reward_models:HPSv3Score", "MizzenAI/HPSv3 on Qwen/Qwen2-VL-7B-Instruct",
               "models", "hpsv3: predicted mean mu; hpsv3_sigma: its uncertainty",
               tolerance=0.1),  # a 7B VLM's head output in bf16
    ScorerInfo("unifiedreward", "scorers.metrics.judges.unifiedreward:UnifiedRewardScorer",
               "CodeGoat24/UnifiedReward-2.0-qwen3vl-8b (or --model openai:MODEL)", "models",
               "unifiedreward: Alignment rating 1-5 of the pointwise judge (NaN when unreadable)",
               tolerance=1.0),  # one rating step (1-5)
)}

#: scorer name -> ``"module.path:Factory"``, read from :data:`SCORER_INFO`
SCORERS: dict[str, str] = {name: info.factory for name, info in SCORER_INFO.items()}


def list_scorers() -> list[ScorerInfo]:
    """Every registered scorer, in :data:`SCORERS` order (nothing is imported)."""
    return [SCORER_INFO[name] for name in SCORERS]


def format_scorer_list() -> str:
    """``ts2 score --list``: one block per scorer."""
    lines = []
    for info in list_scorers():
        lines += [info.name, f"  default model: {info.default_model}", f"  needs:         pip install '.[{info.extra}]' "
                  f"(from a clone; 'ts2-evaluate[{info.extra}]' once on PyPI)", f"  outputs:       {info.outputs}"]
    return "\n".join(lines)


def check_scorer_name(name: str) -> str:
    """``name`` when it is a registered scorer, else a ``ValueError`` naming the closest one and listing them all
    (``unknown scorer 'clip_scor' (did you mean 'clip_score'?); available: ...``); imports nothing."""
    if name not in SCORERS:
        from scorers.checks import did_you_mean

        raise ValueError(f"unknown scorer {name!r}{did_you_mean(name, SCORERS)}; available: "
                         f"{', '.join(sorted(SCORERS))}")
    return name


def get_factory(name: str) -> Callable[..., Any]:
    """The factory registered as ``name`` (imports its module now)."""
    target = SCORERS[check_scorer_name(name)]
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def build_scorer(name: str, *, model: str | None = None, device: Any = None, precision: str | None = None,
                 data_dir: str | None = None, **options: Any) -> Any:
    """Instantiate scorer ``name``; ``None`` values are dropped so each factory keeps its own defaults.

    ``device=None`` / ``precision=None`` leave the choice to the scorer (embedding scorers: CUDA when available,
    fp32). ``data_dir`` (the folder being scored) goes only to factories that declare a ``data_dir`` parameter
    (e.g. question-based scorers that read ``tifa_questions.csv`` from it). An option the factory does not take is
    a ``ValueError`` listing the ones it does, raised before anything is loaded.
    """
    factory = get_factory(name)
    kwargs = {k: v for k, v in dict(options, model=model, precision=precision).items() if v is not None}
    parameters = inspect.signature(factory).parameters
    served = _served_options(kwargs)
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        valid = sorted(n for n, p in parameters.items() if n not in ("self", "device", "data_dir")
                       and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY))
        unknown = sorted(set(kwargs) - set(valid))
        if unknown:
            raise ParameterError("scorer {name!r} has no option {unknown}; its options: {valid}{options:}", name=name,
                                 unknown=", ".join(map(repr, unknown)), valid=", ".join(valid))
    if data_dir is not None and "data_dir" in parameters:
        kwargs["data_dir"] = data_dir
    if model is not None and model.startswith("openai:") and "api_base" not in parameters:
        # a served VQA model (``openai:MODEL``) becomes the backend of a scorer that takes one (tifa, dsg, vqa_score)
        from scorers.models.openai_compat import OpenAIChat

        if "backend" not in parameters:
            raise ValueError(f"scorer {name!r} cannot use a served model ({model})")
        kwargs.pop("model")
        kwargs["backend"] = OpenAIChat(model, **served)
    elif served and "api_base" not in parameters:
        raise ParameterError("option(s) {served} apply to served models only ({model=})", served=sorted(served),
                             model="openai:MODEL")
    else:
        kwargs.update(served)
    scorer = factory(device=device, **kwargs)
    from scorers.scoring.usage import MeteredScorer, served_backends

    return MeteredScorer(scorer) if served_backends(scorer) else scorer


def _served_options(kwargs: dict) -> dict:
    """Pop the served-model options (``scorers.models.openai_compat.SERVED_OPTIONS``) out of ``kwargs``."""
    from scorers.models.openai_compat import SERVED_OPTIONS

    return {k: kwargs.pop(k) for k in SERVED_OPTIONS if k in kwargs}
