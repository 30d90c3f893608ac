"""Where a built-in open_clip architecture gets its weights (``model="ViT-B-32", pretrained="openai"``), decided before
open_clip is asked, so that a failure is one line in seconds instead of a minute of retries:

* no ``pretrained``: an error naming ``pretrained`` (open_clip would build the architecture with *random* weights
  and only log a warning), unless ``allow_random_weights=True`` (benchmarks, which time the forward pass);
* a file: used as it is;
* a tag: its weights' Hub repo is looked up in open_clip's table; when the Hub does not answer one short probe
  (:func:`scorers.models.loading.hub_reachable`) or ``HF_HUB_OFFLINE=1`` is set, the cached copy is used, and when
  there is none the load fails at once naming the tag, the repo, the cache, the endpoint tried and what to pass.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

from scorers.errors import Wording
from scorers.models.loading import ModelLoadError, cached_file, hub_cache_dir, hub_reachable
from scorers.tables.release_download import PROBE_TIMEOUT_S

__all__ = ["builtin_weights", "hpsv2_checkpoint", "random_weights_error"]

_WEIGHT_FILES = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")


def random_weights_error(model: str) -> ModelLoadError:
    import open_clip

    tags = open_clip.list_pretrained_tags_by_model(model)
    example = f" (tags of {model}: {', '.join(tags[:4])}{', ...' if len(tags) > 4 else ''})" if tags else ""
    return ModelLoadError("{model=}: an open_clip architecture with no weights would score with random weights; pass "
                          "{pretrained=TAG} or a weights file{example}, or {allow_random_weights=True} to do so on "
                          "purpose", model=model, example=example)


def _hub_files(cfg: dict) -> tuple[str, tuple[str, ...]] | None:
    """(repo id, weight file names) of an open_clip pretrained config's ``hf_hub`` entry, else ``None``."""
    hub = cfg.get("hf_hub")
    if not hub:
        return None
    parts = hub.split("/")
    repo, filename = "/".join(parts[:2]), "/".join(parts[2:])
    return repo, ((filename,) if filename else _WEIGHT_FILES)


@contextmanager
def _offline() -> Iterator[None]:
    """``HF_HUB_OFFLINE`` for this block only: open_clip's ``hf_hub_download`` then reads the cache, no retries."""
    from huggingface_hub import constants

    before = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = before


@contextmanager
def builtin_weights(model: str, pretrained: str | None, *, allow_random_weights: bool = False) -> Iterator[str | None]:
    """Yield the ``pretrained`` argument for ``open_clip.create_model_and_transforms(model, ...)`` (see module
    docstring); loading errors inside the block become one :class:`ModelLoadError` line."""
    import open_clip
    from huggingface_hub import constants

    label = Wording("{model=, pretrained=}", model=model, pretrained=pretrained)
    offline = None
    if pretrained is None:
        if not allow_random_weights:
            raise random_weights_error(model)
    elif not os.path.isfile(os.path.expanduser(pretrained)):
        cfg = open_clip.get_pretrained_cfg(model, pretrained)
        if not cfg:
            tags = open_clip.list_pretrained_tags_by_model(model)
            raise ModelLoadError("{label}: not a file and not a pretrained tag of {model} (tags: {tags})", label=label,
                                 model=model, tags=", ".join(tags) or "none")
        hub = _hub_files(cfg)
        if hub is not None:
            repo, files = hub
            cached = cached_file(repo, files)
            if constants.is_offline_mode() or not hub_reachable():
                if cached is None:
                    why = ("HF_HUB_OFFLINE=1 is set" if constants.is_offline_mode() else
                           f"{constants.ENDPOINT} did not answer within {PROBE_TIMEOUT_S:g} s")
                    raise ModelLoadError("{label}: its weights ({repo}) are not in the Hugging Face cache ({cache}) "
                                         "and {why}; pass a weights file with {pretrained=FILE} (or connect and run "
                                         "once to cache them)", label=label, repo=repo, cache=hub_cache_dir(), why=why)
                offline = _offline()
    try:
        if offline is None:
            yield pretrained
        else:
            with offline:
                yield pretrained
    except ModelLoadError:
        raise
    except (OSError, RuntimeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ModelLoadError("{label}: cannot load it ({first}); looked in the Hugging Face cache {cache}; pass a "
                             "weights file with {pretrained=FILE}", label=label, first=first, cache=hub_cache_dir()
                             ) from None


def hpsv2_checkpoint(repo: str, filename: str, revision: str) -> str:
    """An HPSv2 checkpoint file (``scorers.metrics.reward_models.HPSv2Score``) from the Hub or its cache: one-line error when it
    cannot be had."""
    from huggingface_hub import hf_hub_download

    try:
        return hf_hub_download(repo, filename, revision=revision)
    except Exception as error:
        raise ModelLoadError("hpsv2: cannot get {repo}/{filename} ({kind}); pass a local file with {pretrained=PATH}",
                             repo=repo, filename=filename, kind=type(error).__name__) from None
