"""Human-judgment sets as one table each, with provenance: rating rows ``item, system, image, prompt, human`` and
pair rows ``item, prompt, image_a, image_b, preference`` (a / b / tie).

Every loader returns ``(frame, provenance)``; provenance is ``{source, revision, sha256, sha256_pinned, licence,
file, note}``. Loaders take ``path=`` for a local copy, else download once at a pinned revision through
:mod:`scorers.tables.release`, the one download path (:func:`~scorers.tables.release.fetch` for files with a pinned sha256 and the
GitHub file, :func:`~scorers.tables.release.fetch_hub_unpinned` for Hub files whose digest could not be read);
``offline=True`` / ``HF_HUB_OFFLINE=1`` reads the cache only.  Nothing here is imported by
``scorers`` at start-up (pandas / pyarrow load on first use).
"""
from scorers.sets._common import PAIR_COLUMNS, RATING_COLUMNS, HubFile, SetFormatError, check_pairs
from scorers.sets.preferences import (load_hpdv2, load_imagerewarddb, load_mjbench_alignment, load_pickapic_v2, read_hpdv2,
                          read_imagerewarddb, read_mjbench, read_pickapic)
from scorers.sets.ratings import load_evalmuse, load_gecko2k, read_evalmuse, read_gecko_prompts

#: set name -> loader, for the card / runner
LOADERS = {
    "evalmuse": load_evalmuse,
    "gecko2k": load_gecko2k,
    "pickapic_v2": load_pickapic_v2,
    "hpdv2": load_hpdv2,
    "imagerewarddb": load_imagerewarddb,
    "mjbench_alignment": load_mjbench_alignment,
}

__all__ = ["LOADERS", "PAIR_COLUMNS", "RATING_COLUMNS", "HubFile", "SetFormatError", "check_pairs", "load_evalmuse", "load_gecko2k",
           "load_hpdv2", "load_imagerewarddb", "load_mjbench_alignment", "load_pickapic_v2", "read_evalmuse",
           "read_gecko_prompts", "read_hpdv2", "read_imagerewarddb", "read_mjbench", "read_pickapic"]
