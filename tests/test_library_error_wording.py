"""Library errors name Python parameters; ``ts2`` names its flags (issue 25, section 4).

The library's messages are checked from the source (an AST walk over every ``raise`` of the modules below: no string in
it holds a ``--flag``), and the CLI's wording through one real command and :func:`scorers.cli._validate.flag_wording`
on each library wording it translates.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from scorers.cli import main
from scorers.cli._validate import LIBRARY_TO_FLAG, flag_wording
from scorers.stats.meta import ts2_meta
from scorers.stats.orientation import resolve_orientation

PACKAGE = Path(__file__).resolve().parents[1] / "scorers"
#: modules whose raise statements were reworded; the CLI, the report, the demo and the model loaders still name flags
LIBRARY = ["meta.py", "agreement.py", "pairwise.py", "table_readers.py", "orientation.py", "graph.py", "runner.py",
           "export.py", "cache.py", "release.py", "serve.py", "engines/ray_data.py", "qga/answers.py",
           "tifa_bench/tifa_v1_files.py", "ratings.py",
           "tifa_bench/generate.py", "tifa_bench/model_leaderboard.py", "ts2_dataset.py",
           "registry.py", "set_scoring.py", "models/loading.py", "models/open_clip_weights.py", "models/sbert.py",
           "models/hpsv3.py", "models/imagereward.py", "models/openai_compat.py"]
#: flags of other programs a library message may name: vLLM's server option for the top-logprobs a VQAScore needs
OTHER_PROGRAMS_FLAGS = {"--max-logprobs"}


@pytest.mark.parametrize("name", LIBRARY)
def test_library_raise_statements_name_no_flag(name):
    tree = ast.parse((PACKAGE / name).read_text(encoding="utf-8"))
    found = [f"{name}:{sub.lineno}: {sub.value!r}"
             for node in ast.walk(tree) if isinstance(node, ast.Raise) and node.exc
             for sub in ast.walk(node.exc)
             if isinstance(sub, ast.Constant) and isinstance(sub.value, str)
             and set(re.findall(r"(?<![\w-])--[a-z][\w-]*", sub.value)) - OTHER_PROGRAMS_FLAGS]
    assert found == []


def test_library_messages_name_parameters():
    with pytest.raises(ValueError, match=r"^n_bootstrap must be >= 0, got -1$"):
        ts2_meta([0.9, 0.1], [0, 0], ["0", "1"], n_bootstrap=-1)
    with pytest.raises(ValueError, match=r"^lower_is_better 'nope': no such score column"):
        resolve_orientation(["a"], lower_is_better=["nope"])


@pytest.mark.parametrize("library, command_line", [
    ("n_bootstrap must be >= 0, got -1", "--n-bootstrap must be >= 0, got -1"),
    ("s.csv: lower_is_better 'nope': no such score column", "s.csv: --lower-is-better 'nope': no such score column"),
    ("higher_is_better 'x': no such score column", "--higher-is-better 'x': no such score column"),
    ("stray quote characters: pass clean_quotes=True to strip them",
     "stray quote characters: pass --clean-quotes to strip them"),
    ("use fewer resamples (n_bootstrap) or grouping='item'", "use fewer resamples (--n-bootstrap) or --group-by item"),
    ("item 'a': boom (use on_error='skip' to record it and go on)",
     "item 'a': boom (use --on-error skip to record it and go on)"),
    ("workers must be >= 1, got 0", "--ray-workers must be >= 1, got 0"),
    ("num_workers must be an integer >= 0, got -1", "--num-workers must be an integer >= 0, got -1"),
    ("max_batch_size must be an integer >= 1, got 0", "--max-batch-size must be an integer >= 1, got 0"),
    ("or pass another out / cache_dir", "or pass another --out / --cache-dir"),
    ("offline mode (offline=True or HF_HUB_OFFLINE=1)", "offline mode (--offline or HF_HUB_OFFLINE=1)"),
    ("human column 'rater': no such column; available: a, b", "--human 'rater': no such column; available: a, b"),
    ("lower_is_better 'x' is not one of the metrics columns ['m']", "--lower-is-better 'x' is not one of the --metric "
     "columns ['m']"),
    ("x/1.png exists but images_per_prompt=1 writes 1.png", "x/1.png exists but --images-per-prompt 1 writes 1.png"),
    ("two results have the same model name (['a', 'a']); give each a name (read_results(path, name=...)) to tell them "
     "apart", "two results have the same model name (['a', 'a']); pass --name to tell them apart"),
    ("or pass data_dir=DIR holding metadata.csv", "or pass --data-dir DIR holding metadata.csv"),
    ("cannot reach http://h/v1: ConnectError: refused (is the server running? check api_base / OPENAI_BASE_URL)",
     "cannot reach http://h/v1: ConnectError: refused (is the server running? check --api-base / OPENAI_BASE_URL)"),
    ("option(s) ['api_base'] apply to served models only (model='openai:MODEL')",
     "option(s) ['api_base'] apply to served models only (--model openai:MODEL)"),
    # scorers.sets.scoring: each line as ts2 score --set printed it before the library named parameters
    ("set_name 'x': not a set this tool knows; one of ts2, tifa_v1", "--set 'x': not a set this tool knows; one of "
     "ts2, tifa_v1"),
    ("genai_bench: give the GenAI-Bench Parquet file (the Hub dataset BaiqiL/GenAI-Bench, ratings and images in one "
     "table) with set_file=FILE", "genai_bench: give the GenAI-Bench Parquet file (the Hub dataset BaiqiL/GenAI-Bench, "
     "ratings and images in one table) with --set-file FILE"),
    ("(first: a.jpg); on_error='skip' records them and goes on", "(first: a.jpg); --on-error skip records them and "
     "goes on"),
    ("download the HPDv2 test images and pass images_dir=DIR", "download the HPDv2 test images and pass --images-dir "
     "DIR"),
    ("add them, or on_error='skip' to record them and go on", "add them, or --on-error skip to record them and go on"),
    ("set_name='ts2' reads data_dir (metadata.csv + images/); images_dir and set_file apply to the other sets",
     "--set ts2 reads --data-dir (metadata.csv + images/); --images-dir and --set-file apply to the other sets"),
    ("data_dir is TS2's folder; set_name='hpdv2' takes images_dir (and set_file)",
     "--data-dir is TS2's folder; --set hpdv2 takes --images-dir (and --set-file)"),
    ("set_name='mjbench_alignment': the set already has a column 'x'; its scores would replace it",
     "--set mjbench_alignment: the set already has a column 'x'; its scores would replace it"),
    ("tifa_v1: the TIFA v1.0 bench scores your generated images; pass images_dir=DIR (<text_id>.png",
     "tifa_v1: the TIFA v1.0 bench scores your generated images; pass --images-dir DIR (<text_id>.png"),
    ("set_name='tifa_v1' reads the pinned TIFA v1.0 files (ts2 tifa-bench takes local copies); set_file does not "
     "apply", "--set tifa_v1 reads the pinned TIFA v1.0 files (ts2 tifa-bench takes local copies); --set-file does "
     "not apply"),
    ("set_name='tifa_v1' with the tifa scorer runs as `ts2 tifa-bench score` does: accelerate engine, no jpeg_draft",
     "--set tifa_v1 with the tifa scorer runs as `ts2 tifa-bench score` does: accelerate engine, no --jpeg-draft"),
    # scorers.tables.release: the note of paper_table2.csv
    ("so it is only read from data_dir/$TS2_DATA (the same", "so it is only read from --data-dir/$TS2_DATA (the same"),
    # scorers.models.loading.model_source: its option is the parameter naming the model; the quotes stay as they were
    ("model='/m/clpi': no such folder (a local model folder, or a Hub id like owner/name)",
     "--model /m/clpi: no such folder (a local model folder, or a Hub id like owner/name)"),
    ("sbert='/m/no-sbert': no such folder (a local", "--sbert /m/no-sbert: no such folder (a local"),
    ("model='o/n': not a local folder and not in the Hugging Face cache (/hf/hub), and HF_HUB_OFFLINE=1 forbids "
     "downloading it; pass a local model folder with model=PATH", "--model 'o/n': not a local folder and not in the "
     "Hugging Face cache (/hf/hub), and HF_HUB_OFFLINE=1 forbids downloading it; pass a local model folder with "
     "--model PATH"),
    ("sbert='o/n': not a local folder and not in the Hugging Face cache (/c), and http://h did not answer within 3 s; "
     "pass a local model folder with sbert=PATH (or connect and run once to cache it)", "--sbert 'o/n': not a local "
     "folder and not in the Hugging Face cache (/c), and http://h did not answer within 3 s; pass a local model "
     "folder with --sbert PATH (or connect and run once to cache it)"),
    ("ModelLoadError: base='o/n': cannot load it (boom); looked in 'o/n' and the Hugging Face cache /c; pass a local "
     "model folder with base=PATH", "ModelLoadError: --option base= 'o/n': cannot load it (boom); looked in 'o/n' and "
     "the Hugging Face cache /c; pass a local model folder with --option base= PATH"),
    ("processor='o/n': cannot load it (x); pass a local model folder with processor=PATH",
     "--option processor= 'o/n': cannot load it (x); pass a local model folder with --option processor= PATH"),
    ("tokenizer='./t': no such folder (a", "--option tokenizer= ./t: no such folder (a"),
    ("model='ViT-X --pretrained y': cannot load it (z)", "--model 'ViT-X --pretrained y': cannot load it (z)"),
    # scorers.models.open_clip_weights
    ("model='ViT-B-32': an open_clip architecture with no weights would score with random weights; pass pretrained=TAG"
     " or a weights file (tags of ViT-B-32: openai, ...), or allow_random_weights=True to do so on purpose",
     "--model ViT-B-32: an open_clip architecture with no weights would score with random weights; pass --pretrained "
     "TAG or a weights file (tags of ViT-B-32: openai, ...), or --allow-random-weights to do so on purpose"),
    ("model='ViT-B-32', pretrained='openai': its weights (r) are not in the Hugging Face cache (/c) and "
     "HF_HUB_OFFLINE=1 is set; pass a weights file with pretrained=FILE (or connect and run once to cache them)",
     "--model ViT-B-32 --pretrained openai: its weights (r) are not in the Hugging Face cache (/c) and "
     "HF_HUB_OFFLINE=1 is set; pass a weights file with --pretrained FILE (or connect and run once to cache them)"),
    ("model='ViT-B-32', pretrained='nope': not a file and not a pretrained tag of ViT-B-32 (tags: openai)",
     "--model ViT-B-32 --pretrained nope: not a file and not a pretrained tag of ViT-B-32 (tags: openai)"),
    ("model='ViT-B-32', pretrained=None: cannot load it (x); looked in the Hugging Face cache /c; pass a weights file "
     "with pretrained=FILE", "--model ViT-B-32: cannot load it (x); looked in the Hugging Face cache /c; pass a "
     "weights file with --pretrained FILE"),
    ("hpsv2: cannot get r/f (E); pass a local file with pretrained=PATH",
     "hpsv2: cannot get r/f (E); pass a local file with --pretrained PATH"),
    # scorers.models.hpsv3, scorers.models.imagereward
    ("model='./h': no such file or folder", "--model ./h: no such file or folder"),
    ("model='MizzenAI/HPSv3': cannot get HPSv3.safetensors (E); pass a local HPSv3.safetensors or a folder",
     "--model MizzenAI/HPSv3: cannot get HPSv3.safetensors (E); pass a local HPSv3.safetensors or a folder"),
    ("model='/x': checkpoint does not match ImageReward (missing ['a'], unexpected [])",
     "--model /x: checkpoint does not match ImageReward (missing ['a'], unexpected [])"),
    # words that only contain a parameter's name are left alone
    ("my_n_bootstrap_column and n_bootstraps", "my_n_bootstrap_column and n_bootstraps"),
    ("higher_is_better has no entry for column(s) ['a']", "higher_is_better has no entry for column(s) ['a']"),
    ("http://h does not serve model 'x'; it serves: a", "http://h does not serve model 'x'; it serves: a"),
    ("api_base='u': bad", "api_base='u': bad"),
])
def test_cli_names_the_flag(library, command_line):
    assert flag_wording(library) == command_line


def test_library_model_errors_name_parameters(tmp_path):
    from scorers.models.loading import ModelLoadError, model_source

    typo = str(tmp_path / "clpi")
    with pytest.raises(ModelLoadError, match=rf"^model='{re.escape(typo)}': no such folder"):
        with model_source(typo):
            pass
    with pytest.raises(ModelLoadError, match=rf"^sbert='{re.escape(typo)}': no such folder"):
        with model_source(typo, option="sbert"):
            pass


def test_every_translation_names_a_flag():
    assert all("--" in flag for flag in LIBRARY_TO_FLAG.values())


def test_a_command_prints_the_flag(tmp_path, capsys):
    scores = tmp_path / "s.csv"
    scores.write_text("seg_id,file_name,a\n0,x.jpg,0.5\n0,y.jpg,0.1\n", encoding="utf-8")
    metadata = tmp_path / "m.csv"
    metadata.write_text("id,target_prompt,file_name,image_source,rank\n0,p,x.jpg,s,0\n0,p,y.jpg,s,1\n",
                        encoding="utf-8")
    code = main(["meta", str(scores), "--metadata", str(metadata), "--lower-is-better", "nope"])
    err = capsys.readouterr().err
    assert code == 2 and "--lower-is-better 'nope': no such score column" in err and "lower_is_better" not in err
