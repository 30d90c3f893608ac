"""Human-judgment sets as one table each, with provenance: rating rows ``item, system, image, prompt, human`` and
pair rows ``item, prompt, image_a, image_b, preference`` (a / b / tie).

Every loader returns ``(frame, provenance)``; provenance is ``{source, revision, sha256, sha256_pinned, licence,
file, note}``. Loaders take ``path=`` for a local copy, else download once at a pinned revision through
:mod:`scorers.tables.release_download`, the one download path (:func:`~scorers.tables.release_download.fetch` for files with a pinned sha256 and the
GitHub file, :func:`~scorers.tables.release_download.fetch_hub_unpinned` for Hub files whose digest could not be read);
``offline=True`` / ``HF_HUB_OFFLINE=1`` reads the cache only.  Nothing here is imported by
``scorers`` at start-up, and this package imports its loaders on first use (pandas / pyarrow with them), so that
:mod:`scorers.sets.registry`, where every set is one record with its loader, stays light.
"""
from __future__ import annotations

#: the public names of the loaders' modules, imported on first use
_EXPORTS = {
    "set_files": ("PAIR_COLUMNS", "RATING_COLUMNS", "HubFile", "SetFormatError", "SetImagesUnavailable", "check_pairs",
                "pair_repeats", "preference_labels"),
    "preferences": ("load_hpdv2", "load_imagerewarddb", "load_mjbench_alignment", "load_pickapic_v2", "read_hpdv2",
                    "read_imagerewarddb", "read_mjbench", "read_pickapic"),
    "ratings": ("load_evalmuse", "load_gecko2k", "load_genai_bench", "load_tifa160", "read_evalmuse",
                "read_gecko_prompts"),
}
__all__ = sorted(name for names in _EXPORTS.values() for name in names)


def __getattr__(name: str):
    if name in _EXPORTS["set_files"]:
        from scorers.sets import set_files as module
    elif name in _EXPORTS["preferences"]:
        from scorers.sets import preferences as module
    elif name in _EXPORTS["ratings"]:
        from scorers.sets import ratings as module
    else:
        raise AttributeError(f"module 'scorers.sets' has no attribute {name!r}")
    return getattr(module, name)
