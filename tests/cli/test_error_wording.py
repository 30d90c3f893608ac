"""Library errors name Python parameters; ``ts2`` names its flags.

The library's messages are checked from the source (an AST walk over every ``raise`` of the modules below: no string in
it holds a ``--flag``), and the CLI's wording through real commands and :class:`scorers.cli._validate.OptionNames` on
each library wording (a :class:`scorers.errors.Wording`, as the library raises it) it translates: the option comes from
argparse's dest -> option table of the command that ran, never from the text.
"""
from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

from scorers.errors import ParameterError, Wording, mention
from scorers.cli import Parser, build_parser, main
from scorers.cli._validate import OptionNames
from scorers.stats.meta import ts2_meta
from scorers.stats.orientation import resolve_orientation

PACKAGE = Path(__file__).resolve().parents[2] / "scorers"
#: modules whose raise statements were reworded; the CLI, the report, the demo and the model loaders still name flags
LIBRARY = ["stats/meta.py", "stats/agreement.py", "stats/preference_accuracy.py", "stats/resampling.py",
           "tables/pandas_tables.py", "stats/orientation.py",
           "stats/graph.py", "scoring/runner.py", "ts2/export.py", "scoring/cache.py", "tables/release.py",
           "tables/release_download.py",
           "rewards/serve.py", "scoring/engines/ray_data.py", "metrics/qga/answers.py", "tifa_bench/tifa_v1_files.py",
           "stats/correlation.py", "sets/ratings.py",
           "tifa_bench/generate.py", "tifa_bench/model_leaderboard.py", "ts2/dataset.py",
           "scoring/registry.py", "sets/scoring.py", "sets/registry.py", "sets/own_paths.py", "models/loading.py",
           "models/open_clip_weights.py",
           "models/sbert.py", "models/hpsv3.py", "models/imagereward.py", "models/openai_compat.py"]
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


def _command(path: str) -> OptionNames:
    """The parameter -> option table of ``ts2 PATH`` (``"tifa-bench report"``), as ``scorers.cli.main`` builds it."""
    root = build_parser()
    parser = root
    for name in path.split():
        parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
    return OptionNames(parser, root)


_LABEL = Wording("{model=, pretrained=}", model="ViT-B-32", pretrained="openai")

#: (the command that ran, the wording as the library raises it, its str, the command's line)
CASES = [
    ("meta", Wording("{n_bootstrap} must be >= 0, got {v}", v=-1), "n_bootstrap must be >= 0, got -1",
     "--n-bootstrap must be >= 0, got -1"),
    ("meta", Wording("s.csv: {o} {c!r}: no such score column", o=mention("lower_is_better"), c="nope"),
     "s.csv: lower_is_better 'nope': no such score column", "s.csv: --lower-is-better 'nope': no such score column"),
    ("meta", Wording("{o} {c!r}: no such score column", o=mention("higher_is_better"), c="x"),
     "higher_is_better 'x': no such score column", "--higher-is-better 'x': no such score column"),
    ("meta", Wording("stray quote characters: pass {clean_quotes=True} to strip them"),
     "stray quote characters: pass clean_quotes=True to strip them",
     "stray quote characters: pass --clean-quotes to strip them"),
    ("correlate", Wording("use fewer resamples ({n_bootstrap}) or {grouping='item'}"),
     "use fewer resamples (n_bootstrap) or grouping='item'", "use fewer resamples (--n-bootstrap) or --group-by item"),
    ("score", Wording("item {k!r}: boom (use {on_error='skip'} to record it and go on)", k="a"),
     "item 'a': boom (use on_error='skip' to record it and go on)",
     "item 'a': boom (use --on-error skip to record it and go on)"),
    ("score", Wording("{workers} must be >= 1, got {v}", v=0), "workers must be >= 1, got 0",
     "--ray-workers must be >= 1, got 0"),
    ("score", Wording("{num_workers} must be an integer >= 0, got {v!r}", v=-1),
     "num_workers must be an integer >= 0, got -1", "--num-workers must be an integer >= 0, got -1"),
    ("serve", Wording("{max_batch_size} must be an integer >= 1, got {v!r}", v=0),
     "max_batch_size must be an integer >= 1, got 0", "--max-batch-size must be an integer >= 1, got 0"),
    ("score", Wording("or pass another {out} / {cache_dir}"), "or pass another out / cache_dir",
     "or pass another --out / --cache-dir"),
    ("score", Wording("offline mode ({offline=True} or HF_HUB_OFFLINE=1)"),
     "offline mode (offline=True or HF_HUB_OFFLINE=1)", "offline mode (--offline or HF_HUB_OFFLINE=1)"),
    ("correlate", Wording("{o} {c!r}: no such column; available: a, b", o=Wording("{human:human column}"), c="rater"),
     "human column 'rater': no such column; available: a, b", "--human 'rater': no such column; available: a, b"),
    ("correlate", Wording("{lower_is_better} {c!r} is not one of the {metrics} columns {names}", c="x", names=["m"]),
     "lower_is_better 'x' is not one of the metrics columns ['m']", "--lower-is-better 'x' is not one of the --metric "
     "columns ['m']"),
    ("tifa-bench generate", Wording("x/1.png exists but {images_per_prompt=} writes 1.png", images_per_prompt=1),
     "x/1.png exists but images_per_prompt=1 writes 1.png", "x/1.png exists but --images-per-prompt 1 writes 1.png"),
    ("tifa-bench report", Wording("two results have the same model name ({n}); pass {name:a name to read_results(path, "
                                  "name=...)} to tell them apart", n=["a", "a"]),
     "two results have the same model name (['a', 'a']); pass a name to read_results(path, name=...) to tell them "
     "apart", "two results have the same model name (['a', 'a']); pass --name to tell them apart"),
    ("score", Wording("or pass {data_dir=DIR} holding metadata.csv"), "or pass data_dir=DIR holding metadata.csv",
     "or pass --data-dir DIR holding metadata.csv"),
    ("score", Wording("cannot reach {w} (is the server running? check {api_base} / OPENAI_BASE_URL)",
                      w="http://h/v1: ConnectError: refused"),
     "cannot reach http://h/v1: ConnectError: refused (is the server running? check api_base / OPENAI_BASE_URL)",
     "cannot reach http://h/v1: ConnectError: refused (is the server running? check --api-base / OPENAI_BASE_URL)"),
    ("score", Wording("option(s) {s} apply to served models only ({model=})", s=["api_base"], model="openai:MODEL"),
     "option(s) ['api_base'] apply to served models only (model='openai:MODEL')",
     "option(s) ['api_base'] apply to served models only (--model openai:MODEL)"),
    # scorers.sets.scoring: each line as ts2 score --set printed it before the library named parameters
    ("score", Wording("{set_name} {n!r}: not a set this tool knows; one of ts2, tifa_v1", n="x"),
     "set_name 'x': not a set this tool knows; one of ts2, tifa_v1", "--set 'x': not a set this tool knows; one of "
     "ts2, tifa_v1"),
    ("score", Wording("genai_bench: give the GenAI-Bench Parquet file (the Hub dataset BaiqiL/GenAI-Bench, ratings and "
                      "images in one table) with {set_file=FILE}"),
     "genai_bench: give the GenAI-Bench Parquet file (the Hub dataset BaiqiL/GenAI-Bench, ratings and images in one "
     "table) with set_file=FILE", "genai_bench: give the GenAI-Bench Parquet file (the Hub dataset BaiqiL/GenAI-Bench, "
     "ratings and images in one table) with --set-file FILE"),
    ("score", Wording("(first: a.jpg); {on_error='skip'} records them and goes on"),
     "(first: a.jpg); on_error='skip' records them and goes on", "(first: a.jpg); --on-error skip records them and "
     "goes on"),
    ("score", Wording("download the HPDv2 test images and pass {images_dir=DIR}"),
     "download the HPDv2 test images and pass images_dir=DIR", "download the HPDv2 test images and pass --images-dir "
     "DIR"),
    ("card", Wording("add them, or {on_error='skip'} to record them and go on"),
     "add them, or on_error='skip' to record them and go on", "add them, or --on-error skip to record them and go on"),
    ("score", Wording("{set_name='ts2'} reads {data_dir} (metadata.csv + images/); {images_dir} and {set_file} apply "
                      "to the other sets"),
     "set_name='ts2' reads data_dir (metadata.csv + images/); images_dir and set_file apply to the other sets",
     "--set ts2 reads --data-dir (metadata.csv + images/); --images-dir and --set-file apply to the other sets"),
    ("score", Wording("{data_dir} is TS2's folder; {set_name=} takes {images_dir} (and {set_file})", set_name="hpdv2"),
     "data_dir is TS2's folder; set_name='hpdv2' takes images_dir (and set_file)",
     "--data-dir is TS2's folder; --set hpdv2 takes --images-dir (and --set-file)"),
    ("score", Wording("{set_name=}: the set already has a column 'x'; its scores would replace it",
                      set_name="mjbench_alignment"),
     "set_name='mjbench_alignment': the set already has a column 'x'; its scores would replace it",
     "--set mjbench_alignment: the set already has a column 'x'; its scores would replace it"),
    ("score", Wording("tifa_v1: the TIFA v1.0 bench scores your generated images; pass {images_dir=DIR} "
                      "(<text_id>.png"),
     "tifa_v1: the TIFA v1.0 bench scores your generated images; pass images_dir=DIR (<text_id>.png",
     "tifa_v1: the TIFA v1.0 bench scores your generated images; pass --images-dir DIR (<text_id>.png"),
    ("score", Wording("{set_name='tifa_v1'} reads the pinned TIFA v1.0 files (ts2 tifa-bench takes local copies); "
                      "{set_file} does not apply"),
     "set_name='tifa_v1' reads the pinned TIFA v1.0 files (ts2 tifa-bench takes local copies); set_file does not "
     "apply", "--set tifa_v1 reads the pinned TIFA v1.0 files (ts2 tifa-bench takes local copies); --set-file does "
     "not apply"),
    ("score", Wording("{set_name='tifa_v1'} with the tifa scorer runs as `ts2 tifa-bench score` does: accelerate "
                      "engine, no {jpeg_draft}"),
     "set_name='tifa_v1' with the tifa scorer runs as `ts2 tifa-bench score` does: accelerate engine, no jpeg_draft",
     "--set tifa_v1 with the tifa scorer runs as `ts2 tifa-bench score` does: accelerate engine, no --jpeg-draft"),
    # scorers.tables.release: the note of paper_table2.csv
    ("release list", Wording("so it is only read from {data_dir}/$TS2_DATA (the same"),
     "so it is only read from data_dir/$TS2_DATA (the same", "so it is only read from --data-dir/$TS2_DATA (the same"),
    # scorers.models.loading.model_source: its option is the parameter naming the model; the quotes stay as they were
    ("score", Wording("{g}: no such folder (a local model folder, or a Hub id like owner/name)",
                      g=mention("model", "/m/clpi")),
     "model='/m/clpi': no such folder (a local model folder, or a Hub id like owner/name)",
     "--model /m/clpi: no such folder (a local model folder, or a Hub id like owner/name)"),
    ("score", Wording("{g}: no such folder (a local", g=mention("sbert", "/m/no-sbert")),
     "sbert='/m/no-sbert': no such folder (a local", "--sbert /m/no-sbert: no such folder (a local"),
    ("score", Wording("{g}: not a local folder and not in the Hugging Face cache (/hf/hub), and HF_HUB_OFFLINE=1 "
                      "forbids downloading it; pass a local model folder with {model=PATH}",
                      g=mention("model", "o/n", quoted=True)),
     "model='o/n': not a local folder and not in the Hugging Face cache (/hf/hub), and HF_HUB_OFFLINE=1 forbids "
     "downloading it; pass a local model folder with model=PATH", "--model 'o/n': not a local folder and not in the "
     "Hugging Face cache (/hf/hub), and HF_HUB_OFFLINE=1 forbids downloading it; pass a local model folder with "
     "--model PATH"),
    ("score", Wording("{g}: not a local folder and not in the Hugging Face cache (/c), and http://h did not answer "
                      "within 3 s; pass a local model folder with {sbert=PATH} (or connect and run once to cache it)",
                      g=mention("sbert", "o/n", quoted=True)),
     "sbert='o/n': not a local folder and not in the Hugging Face cache (/c), and http://h did not answer within 3 s; "
     "pass a local model folder with sbert=PATH (or connect and run once to cache it)", "--sbert 'o/n': not a local "
     "folder and not in the Hugging Face cache (/c), and http://h did not answer within 3 s; pass a local model "
     "folder with --sbert PATH (or connect and run once to cache it)"),
    ("score", Wording("ModelLoadError: {g}: cannot load it (boom); looked in 'o/n' and the Hugging Face cache /c; pass "
                      "a local model folder with {base=PATH}", g=mention("base", "o/n", quoted=True)),
     "ModelLoadError: base='o/n': cannot load it (boom); looked in 'o/n' and the Hugging Face cache /c; pass a local "
     "model folder with base=PATH", "ModelLoadError: --option base= 'o/n': cannot load it (boom); looked in 'o/n' and "
     "the Hugging Face cache /c; pass a local model folder with --option base= PATH"),
    ("score", Wording("{g}: cannot load it (x); pass a local model folder with {processor=PATH}",
                      g=mention("processor", "o/n", quoted=True)),
     "processor='o/n': cannot load it (x); pass a local model folder with processor=PATH",
     "--option processor= 'o/n': cannot load it (x); pass a local model folder with --option processor= PATH"),
    ("score", Wording("{g}: no such folder (a", g=mention("tokenizer", "./t")), "tokenizer='./t': no such folder (a",
     "--option tokenizer= ./t: no such folder (a"),
    ("score", Wording("{g}: cannot load it (z)", g=mention("model", "ViT-X --pretrained y", quoted=True)),
     "model='ViT-X --pretrained y': cannot load it (z)", "--model 'ViT-X --pretrained y': cannot load it (z)"),
    # scorers.models.open_clip_weights
    ("score", Wording("{model=}: an open_clip architecture with no weights would score with random weights; pass "
                      "{pretrained=TAG} or a weights file (tags of ViT-B-32: openai, ...), or "
                      "{allow_random_weights=True} to do so on purpose", model="ViT-B-32"),
     "model='ViT-B-32': an open_clip architecture with no weights would score with random weights; pass pretrained=TAG"
     " or a weights file (tags of ViT-B-32: openai, ...), or allow_random_weights=True to do so on purpose",
     "--model ViT-B-32: an open_clip architecture with no weights would score with random weights; pass --pretrained "
     "TAG or a weights file (tags of ViT-B-32: openai, ...), or --allow-random-weights to do so on purpose"),
    ("score", Wording("{label}: its weights (r) are not in the Hugging Face cache (/c) and HF_HUB_OFFLINE=1 is set; "
                      "pass a weights file with {pretrained=FILE} (or connect and run once to cache them)",
                      label=_LABEL),
     "model='ViT-B-32', pretrained='openai': its weights (r) are not in the Hugging Face cache (/c) and "
     "HF_HUB_OFFLINE=1 is set; pass a weights file with pretrained=FILE (or connect and run once to cache them)",
     "--model ViT-B-32 --pretrained openai: its weights (r) are not in the Hugging Face cache (/c) and "
     "HF_HUB_OFFLINE=1 is set; pass a weights file with --pretrained FILE (or connect and run once to cache them)"),
    ("score", Wording("{model=, pretrained=}: not a file and not a pretrained tag of ViT-B-32 (tags: openai)",
                      model="ViT-B-32", pretrained="nope"),
     "model='ViT-B-32', pretrained='nope': not a file and not a pretrained tag of ViT-B-32 (tags: openai)",
     "--model ViT-B-32 --pretrained nope: not a file and not a pretrained tag of ViT-B-32 (tags: openai)"),
    ("score", Wording("{model=, pretrained=}: cannot load it (x); looked in the Hugging Face cache /c; pass a weights "
                      "file with {pretrained=FILE}", model="ViT-B-32", pretrained=None),
     "model='ViT-B-32', pretrained=None: cannot load it (x); looked in the Hugging Face cache /c; pass a weights file "
     "with pretrained=FILE", "--model ViT-B-32: cannot load it (x); looked in the Hugging Face cache /c; pass a "
     "weights file with --pretrained FILE"),
    ("score", Wording("hpsv2: cannot get r/f (E); pass a local file with {pretrained=PATH}"),
     "hpsv2: cannot get r/f (E); pass a local file with pretrained=PATH",
     "hpsv2: cannot get r/f (E); pass a local file with --pretrained PATH"),
    # scorers.models.hpsv3, scorers.models.imagereward
    ("score", Wording("{model=}: no such file or folder", model="./h"), "model='./h': no such file or folder",
     "--model ./h: no such file or folder"),
    ("score", Wording("{model=}: cannot get HPSv3.safetensors (E); pass a local HPSv3.safetensors or a folder",
                      model="MizzenAI/HPSv3"),
     "model='MizzenAI/HPSv3': cannot get HPSv3.safetensors (E); pass a local HPSv3.safetensors or a folder",
     "--model MizzenAI/HPSv3: cannot get HPSv3.safetensors (E); pass a local HPSv3.safetensors or a folder"),
    ("score", Wording("{model=}: checkpoint does not match ImageReward (missing ['a'], unexpected [])", model="/x"),
     "model='/x': checkpoint does not match ImageReward (missing ['a'], unexpected [])",
     "--model /x: checkpoint does not match ImageReward (missing ['a'], unexpected [])"),
    # scorers.scoring.registry: an unknown --option KEY; the command adds which scorer options have flags
    ("score", Wording("scorer 'clip_score' has no option 'foo'; its options: form, model{options:}"),
     "scorer 'clip_score' has no option 'foo'; its options: form, model",
     "scorer 'clip_score' has no option 'foo'; its options: form, model (--option KEY=VALUE; model, precision, "
     "pretrained, form, decode and allow_random_weights also have their own flags)"),
    # words that only contain a parameter's name are left alone: only a named parameter is translated
    ("meta", Wording("my_n_bootstrap_column and n_bootstraps"), "my_n_bootstrap_column and n_bootstraps",
     "my_n_bootstrap_column and n_bootstraps"),
    ("meta", Wording("higher_is_better has no entry for column(s) {c}", c=["a"]),
     "higher_is_better has no entry for column(s) ['a']", "higher_is_better has no entry for column(s) ['a']"),
    ("score", Wording("http://h does not serve model 'x'; it serves: a"),
     "http://h does not serve model 'x'; it serves: a", "http://h does not serve model 'x'; it serves: a"),
    ("score", Wording("api_base={u!r}: bad", u="u"), "api_base='u': bad", "api_base='u': bad"),
]


@pytest.mark.parametrize("command, wording, library, command_line", CASES)
def test_cli_names_the_flag(command, wording, library, command_line):
    assert str(wording) == library and str(ParameterError(wording)) == library
    assert _command(command).say(ParameterError(wording)) == command_line


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
    named = [(command, name) for command, wording, _, _ in CASES for name in wording.parameters]
    assert len(named) >= 50
    assert all(_command(command)(name).startswith("--") for command, name in named), named


def test_a_command_prints_the_flag(tmp_path, capsys):
    scores = tmp_path / "s.csv"
    scores.write_text("seg_id,file_name,a\n0,x.jpg,0.5\n0,y.jpg,0.1\n", encoding="utf-8")
    metadata = tmp_path / "m.csv"
    metadata.write_text("id,target_prompt,file_name,image_source,rank\n0,p,x.jpg,s,0\n0,p,y.jpg,s,1\n",
                        encoding="utf-8")
    code = main(["meta", str(scores), "--metadata", str(metadata), "--lower-is-better", "nope"])
    err = capsys.readouterr().err
    assert code == 2 and "--lower-is-better 'nope': no such score column" in err and "lower_is_better" not in err


def test_the_option_comes_from_argparse_s_table():
    error = ParameterError("{n_bootstrap} must be >= 0, got {v}; or {grouping='item'}", v=-1)
    parser = Parser(prog="x")
    parser.add_argument("--resamples", dest="n_bootstrap", type=int)  # another spelling of the same dest
    parser.add_argument("--by", dest="grouping")
    assert OptionNames(parser).say(error) == "--resamples must be >= 0, got -1; or --by item"
    assert OptionNames(Parser(prog="y")).say(error) == "n_bootstrap must be >= 0, got -1; or grouping='item'"


def test_a_renamed_option_is_the_one_the_error_names(tmp_path, capsys, monkeypatch):
    import scorers.cli

    def renamed():
        root = build_parser()
        meta = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction)).choices["meta"]
        action = meta._option_string_actions.pop("--lower-is-better")
        action.option_strings = ["--lower-better"]
        meta._option_string_actions["--lower-better"] = action
        return root

    monkeypatch.setattr(scorers.cli, "build_parser", renamed)
    scores = tmp_path / "s.csv"
    scores.write_text("seg_id,file_name,a\n0,x.jpg,0.5\n0,y.jpg,0.1\n", encoding="utf-8")
    metadata = tmp_path / "m.csv"
    metadata.write_text("id,target_prompt,file_name,image_source,rank\n0,p,x.jpg,s,0\n0,p,y.jpg,s,1\n",
                        encoding="utf-8")
    code = main(["meta", str(scores), "--metadata", str(metadata), "--lower-better", "nope", "--n-bootstrap", "0"])
    assert code == 2
    assert capsys.readouterr().err == ("ts2 meta: error: --lower-better 'nope': no such score column; available: "
                                       "['a']\n")


def test_an_unknown_seg_id_is_said_as_the_segs_flag(tmp_path, capsys):
    scores = tmp_path / "s.csv"
    scores.write_text("seg_id,file_name,a\n0,x.jpg,0.5\n0,y.jpg,0.1\n", encoding="utf-8")
    metadata = tmp_path / "m.csv"
    metadata.write_text("id,target_prompt,file_name,image_source,rank\n0,p,x.jpg,s,0\n0,p,y.jpg,s,1\n",
                        encoding="utf-8")
    code = main(["meta", str(scores), "--metadata", str(metadata), "--segs", "0,999", "--n-bootstrap", "0"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == "ts2 meta: error: --segs names SEG ids not present in the input: [999]\n"


@pytest.mark.parametrize("argv, said", [
    (["meta", "s.csv", "--bogus"], "ts2 meta: error: unrecognized arguments: --bogus"),
    (["tifa-bench", "report", "r.json", "--out", "o", "--bogus"],
     "ts2 tifa-bench report: error: unrecognized arguments: --bogus"),
])
def test_an_unknown_argument_is_refused_by_the_sub_command(tmp_path, monkeypatch, capsys, argv, said):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.csv").write_text("seg_id,file_name,a\n0,x.jpg,0.5\n", encoding="utf-8")
    (tmp_path / "r.json").write_text("{}", encoding="utf-8")
    assert main(argv) == 2
    assert capsys.readouterr().err == said + "\n"


def test_a_mistyped_command_suggests_the_close_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.csv").write_text("seg_id,file_name,a\n0,x.jpg,0.5\n", encoding="utf-8")
    assert main(["scor"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ts2: error: argument COMMAND: invalid choice: 'scor' (did you mean 'score'?)"), err
    assert len(err.strip().splitlines()) == 1
    assert main(["meta", "s.csv", "--variant", "pap"]) == 2
    assert "invalid choice: 'pap' (did you mean 'paper'?)" in capsys.readouterr().err
