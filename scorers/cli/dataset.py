"""``ts2 dataset export``: write TS2 as Parquet shards + a dataset card (``load_dataset(OUT, "segs")``, no script)."""
from __future__ import annotations

import argparse

from scorers.ts2.dataset import CONFIGS  # light: scorers.ts2.dataset imports datasets only when a build starts


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("dataset", help="build and export the TS2 dataset (Parquet + card)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    export = actions.add_parser(
        "export",
        help="validate the TS2 source and write Parquet shards + README with YAML configs",
        description="Build the TS2 configs (validated) and write OUT/<config>/train-*.parquet plus OUT/README.md, so "
        "that datasets.load_dataset(OUT, 'segs') -- or a Hub repo uploaded from OUT -- works with no script.",
    )
    export.add_argument("--data-dir", help="local source: metadata.csv, images/, tifa_questions.csv, "
                        "dsg_questions.csv (default: download the Hub dataset saxon/T2IScoreScore)")
    export.add_argument("--out", required=True, help="output folder (empty or new, unless --overwrite)")
    export.add_argument("--config", dest="configs", action="append", choices=CONFIGS,
                        help="config to export (repeatable; default: all three, less a question config whose CSV "
                             "--data-dir lacks)")
    export.add_argument("--max-shard-size", default="500MB", help="largest Parquet shard, e.g. 500MB")
    export.add_argument("--skip-missing-images", action="store_true",
                        help="drop rows whose image file is missing (each one is logged) instead of failing")
    export.add_argument("--no-check-images", dest="check_images", action="store_false",
                        help="only check that image files exist, do not decode them")
    export.add_argument("--cache-dir", help="datasets cache for the intermediate build")
    export.add_argument("--repo-id", help="Hub dataset to download when --data-dir is not given")
    export.add_argument("--revision", help="Hub revision (branch, tag or commit) of --repo-id")
    export.add_argument("--overwrite", action="store_true", help="replace an existing export in --out")
    export.set_defaults(handler=_export)
    unpack = actions.add_parser(
        "unpack",
        help="an export (ts2 dataset export, ts2 seg push) back as a data dir: metadata.csv, images/, segs.json...",
        description="Load EXPORT's segs config with datasets.load_dataset and write OUT in the release's layout: "
        "metadata.csv (with a built set's partition, errors, error_types and source_file), images/ (the embedded "
        "files, byte for byte) and the files found beside the shards (segs.json, warnings.txt, the question CSVs). "
        "Every ts2 command then reads OUT (--data-dir OUT, --metadata OUT/metadata.csv). For a Hub repository, "
        "download it first: hf download OWNER/NAME --repo-type dataset --local-dir EXPORT.",
    )
    unpack.add_argument("export", metavar="EXPORT", help="export folder (README.md, segs/train-*.parquet...)")
    unpack.add_argument("--out", required=True, help="data dir to write (empty or new, unless --overwrite)")
    unpack.add_argument("--cache-dir", help="datasets cache for loading the export")
    unpack.add_argument("--overwrite", action="store_true", help="write into a non-empty --out")
    unpack.set_defaults(handler=_unpack)


def _export(args: argparse.Namespace) -> int:
    from scorers.ts2.export import export_parquet

    hub = {k: v for k, v in (("repo_id", args.repo_id), ("revision", args.revision)) if v}
    try:
        result = export_parquet(
            args.out,
            data_dir=args.data_dir,
            configs=args.configs or None,  # None: every config whose source the data dir has
            max_shard_size=args.max_shard_size,
            cache_dir=args.cache_dir,
            overwrite=args.overwrite,
            skip_missing_images=args.skip_missing_images,
            check_images=args.check_images,
            **hub,
        )
    except FileExistsError as error:  # `ts2` reports ValueErrors as one line, without a traceback
        from scorers.errors import wording_of

        raise ValueError(wording_of(error) or str(error)) from None
    for config, files in result.files.items():
        size = sum(f.stat().st_size for f in files) / 1e6
        print(f"{config}: {result.rows[config]:,} rows -> {len(files)} shard(s), {size:.1f} MB in {files[0].parent}")
    print(f"card: {result.readme}")
    print(f"load with: datasets.load_dataset({str(result.out)!r}, 'segs', split='train')")
    return 0


def _unpack(args: argparse.Namespace) -> int:
    from scorers.ts2.export import unpack_export

    out = unpack_export(args.export, args.out, cache_dir=args.cache_dir, overwrite=args.overwrite)
    files = sorted(p.name for p in out.iterdir() if p.is_file())
    n_images = sum(1 for _ in (out / "images").rglob("*") if _.is_file()) if (out / "images").is_dir() else 0
    print(f"unpacked {args.export} into {out}: {', '.join(files)}, images/ ({n_images:,} files)")
    return 0
