"""Release tables on demand (scorers.tables.release): pinned sources, sha256, one download, zero requests after, offline.

A real HTTP server on 127.0.0.1 stands in for both the Hub (``HF_ENDPOINT``) and raw GitHub (``TS2_GITHUB_URL``): it
serves the ``../shared/ts2`` files under the same URL paths as the real sources and records every request.
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from scorers.tables import release, release_download
from scorers.cli import main
from scorers.tables.release import RELEASE_FILES, ChecksumMismatch, PinnedFile, ReleaseFileUnavailable
from tests.helpers.release_sources import DOWNLOADABLE, HUB_NAMES
from tests.helpers.ts2_fixture_data import release_bytes

ROOT = Path(__file__).resolve().parents[2]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the registry --------------------------------------------------------------------------------------------------


def test_registry_covers_every_release_file_with_its_sha256(shared_ts2):
    from tests.helpers.release_data import find

    on_disk = {p.relative_to(shared_ts2).as_posix() for p in shared_ts2.rglob("*.csv")}
    assert on_disk <= set(RELEASE_FILES)  # every file of the release folder is a registered release file
    for name, file in RELEASE_FILES.items():
        assert file.filename == name
        if name == "table2_full_precision.csv":
            assert file.url.endswith("/b77c0343762e8667d00dc5786d9ad50ebab6806c/src/output/pareto_information.csv")
            published = find(name)
            if published is not None:
                assert file.sha256 == _sha256(published)
            assert file.sha256 == "0ba6f118a99014540695542bf710417fcc1e596dbe45ebab38bb9ae2a45286d8"
            continue
        if name in on_disk:  # a release folder may lack a file (paper_table2.csv has no public download)
            assert file.sha256 == _sha256(shared_ts2 / name), name


def test_every_source_is_pinned_to_a_commit():
    for name, file in RELEASE_FILES.items():
        if file.url is None:
            assert name == "paper_table2.csv" and "arXiv:2404.04251" in file.note
            continue
        assert re.fullmatch(r"[0-9a-f]{40}", file.revision), name
        assert f"/{file.revision}/" in file.url, name
        assert file.url.startswith((
            "https://huggingface.co/datasets/saxon/T2IScoreScore/resolve/",
            "https://raw.githubusercontent.com/michaelsaxon/T2IScoreScore/",
        )), name
    assert HUB_NAMES == ["metadata.csv"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(url="https://x/y/abc/t.csv", sha256="0" * 63, filename="t.csv"), "64 lowercase hex"),
    (dict(url="https://x/y/abc/t.csv", sha256="0" * 64, filename="/abs/t.csv"), "relative path"),
    (dict(url="https://x/y/abc/t.csv", sha256="0" * 64, filename="../t.csv"), "relative path"),
    (dict(url="https://x/y/abc/t.csv", sha256="0" * 64, filename="t.csv", revision="def"), "does not appear"),
    (dict(url=None, sha256="0" * 64, filename="t.csv"), "needs a note"),
    (dict(url="https://huggingface.co/datasets/a/b/resolve/abc/t.csv", sha256=None, filename="t.csv"), "non-Hub"),
    (dict(url=None, sha256=None, filename="t.csv", note="by hand"), "non-Hub"),
])
def test_pinned_file_rejects_bad_fields(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PinnedFile(**kwargs)


# --- download once, verify, reuse with zero requests ---------------------------------------------------------------


def test_first_run_downloads_and_verifies_second_run_makes_no_request(sources, fresh_cache, shared_ts2):
    from huggingface_hub import constants

    found = release_download.paths(DOWNLOADABLE, progress=False)
    assert list(found) == DOWNLOADABLE
    for name, local in found.items():
        assert local.read_bytes() == release_bytes(name), name
        assert fresh_cache in local.parents, name  # inside this test's HF_HOME, nowhere else
        # one GET per GitHub file; the Hub file: huggingface_hub's HEAD (metadata) + GET
        assert sources.count(name) == (2 if name in HUB_NAMES else 1), name
    assert sources.count() == len(DOWNLOADABLE) + len(HUB_NAMES)

    before = sources.count()
    again = release_download.paths(DOWNLOADABLE, progress=False)
    assert again == found
    assert sources.count() == before  # second run: 0 requests

    constants.HF_HUB_OFFLINE = True  # (restored by the fixture's monkeypatch) cached files also serve offline
    assert release_download.paths(DOWNLOADABLE, progress=False) == found
    assert sources.count() == before


def test_corrupted_download_is_refused_and_not_kept(sources, fresh_cache, shared_ts2):
    for name in ("released_scores.csv", "metadata.csv"):  # a GitHub file and the Hub file
        sources.corrupt(name)
        with pytest.raises(ChecksumMismatch, match=re.escape(name) + r".*refused"):
            release_download.path(name, progress=False)
        assert release.cached_path(RELEASE_FILES[name]) is None, name
    leftovers = list((fresh_cache / "ts2-evaluate").rglob("*"))
    assert leftovers == []  # no partial or refused file (nor its folder) under our cache folder

    for name in ("released_scores.csv", "metadata.csv"):  # the source fixed: the next call downloads it cleanly
        url_path = urlsplit(RELEASE_FILES[name].url).path
        sources.routes[url_path] = (shared_ts2 / name).read_bytes()
        assert release_download.path(name, progress=False).read_bytes() == (shared_ts2 / name).read_bytes()


def test_damaged_cache_entry_is_fetched_again(sources, fresh_cache, shared_ts2):
    name = "dsg_questions.csv"
    local = release_download.path(name, progress=False)
    local.write_bytes(b"id,prompt\n0,edited\n")
    assert release_download.path(name, progress=False).read_bytes() == (shared_ts2 / name).read_bytes()
    assert sources.count(name) == 2


def test_damaged_hub_cache_entry_is_fetched_again(sources, fresh_cache, shared_ts2):
    local = release_download.path("metadata.csv", progress=False)
    local.write_bytes(b"id,target_prompt\n")  # writes through the snapshot link into the cached blob
    assert release_download.path("metadata.csv", progress=False).read_bytes() == (shared_ts2 / "metadata.csv").read_bytes()
    assert sources.count("metadata.csv") == 4  # HEAD + GET, twice


def test_generic_pinned_file_from_any_url(sources, fresh_cache, shared_ts2):
    """Other loaders (TIFA160 ratings, TIFA v1.0 questions) pin their own files: any URL works the same way."""
    data = (shared_ts2 / "paper_table2.csv").read_bytes()
    sources.routes["/other/abc123/table.csv"] = data
    file = PinnedFile(f"{sources.base}/other/abc123/table.csv", hashlib.sha256(data).hexdigest(), "extra/table.csv",
                      "abc123")
    first = release_download.fetch(file, progress=False)
    assert first.read_bytes() == data and first.name == "table.csv"
    assert release_download.fetch(file, progress=False) == first
    assert sum(1 for _, p in sources.requests if p == "/other/abc123/table.csv") == 1


def test_http_error_is_one_clear_error(sources, fresh_cache):
    file = PinnedFile(f"{sources.base}/gone/abc/t.csv", "0" * 64, "t.csv", "abc")
    with pytest.raises(ReleaseFileUnavailable, match=r"t\.csv: could not download .*HTTP 404"):
        release_download.fetch(file, progress=False)


# --- unpinned files (sha256=None): trust on first use --------------------------------------------------------------


@pytest.fixture
def unpinned(sources, fresh_cache, shared_ts2):
    """A file served at a pinned commit whose digest is not written down (``sha256=None``)."""
    data = (shared_ts2 / "paper_table2.csv").read_bytes()
    sources.routes["/other/abc123/table.csv"] = data
    file = PinnedFile(f"{sources.base}/other/abc123/table.csv", None, "extra/table.csv", "abc123")
    return file, data


def _gets(sources, url_path="/other/abc123/table.csv") -> int:
    return sum(1 for _, p in sources.requests if p == url_path)


def test_unpinned_first_download_records_its_digest_then_zero_requests(unpinned, sources, fresh_cache, caplog):
    file, data = unpinned
    digest = hashlib.sha256(data).hexdigest()
    with caplog.at_level("WARNING", logger="scorers.tables.release_download"):
        local = release_download.fetch(file, progress=False)
    assert local == fresh_cache / "ts2-evaluate" / "unpinned" / "abc123" / "table.csv"
    assert local.read_bytes() == data
    assert (local.parent / "table.csv.sha256").read_text() == digest + "\n"
    assert digest in caplog.text and "pin it" in caplog.text  # says what to pin
    assert release_download.fetch(file, progress=False) == local
    assert release_download.fetch(file, progress=False, offline=True) == local  # offline: the verified cached copy
    assert _gets(sources) == 1  # second and third read: 0 requests


def test_unpinned_without_revision_is_keyed_by_its_url(sources, fresh_cache):
    sources.routes["/loose/t.csv"] = b"a,b\n1,2\n"
    url = f"{sources.base}/loose/t.csv"
    local = release_download.fetch(PinnedFile(url, None, "t.csv"), progress=False)
    assert local.parent == fresh_cache / "ts2-evaluate" / "unpinned" / hashlib.sha256(url.encode()).hexdigest()[:16]


def test_unpinned_changed_cached_copy_is_fetched_again_and_checked_against_the_record(unpinned, sources):
    """As for a pinned file: a damaged copy is refetched; the recorded digest then acts as the pin."""
    file, data = unpinned
    local = release_download.fetch(file, progress=False)
    local.write_bytes(b"x,y\n")
    assert release_download.fetch(file, progress=False).read_bytes() == data
    assert _gets(sources) == 2
    sources.routes["/other/abc123/table.csv"] = data + b"9,9\n"  # the source changed after the first download
    local.write_bytes(b"x,y\n")
    with pytest.raises(ChecksumMismatch, match=r"table\.csv: sha256 .* recorded " + hashlib.sha256(data).hexdigest()):
        release_download.fetch(file, progress=False)
    assert not local.exists() and (local.parent / "table.csv.sha256").is_file()  # refused copy gone, record kept
    with pytest.raises(ReleaseFileUnavailable, match="offline mode"):  # and nothing unverified is served offline
        release_download.fetch(file, progress=False, offline=True)


def test_unpinned_copy_without_a_record_is_not_trusted(unpinned, sources):
    file, data = unpinned
    local = release_download.fetch(file, progress=False)
    (local.parent / "table.csv.sha256").unlink()
    local.write_bytes(b"x,y\n")  # a copy fetch did not write (it writes the record first)
    assert release_download.fetch(file, progress=False).read_bytes() == data
    assert _gets(sources) == 2


def test_offline_true_with_empty_cache_names_the_file_and_makes_no_request(unpinned, sources, fresh_cache):
    file, _ = unpinned
    with pytest.raises(ReleaseFileUnavailable) as caught:
        release_download.fetch(file, progress=False, offline=True)  # HF_HUB_OFFLINE is off here: offline=True wins
    message = str(caught.value)
    assert message.startswith("1 file(s) are not cached and offline mode (offline=True or HF_HUB_OFFLINE=1)")
    assert f"extra/table.csv  <-  {file.url}" in message and str(fresh_cache / "ts2-evaluate") in message
    assert sources.requests == []


def test_offline_false_downloads_even_under_hf_hub_offline(unpinned, sources):
    from huggingface_hub import constants

    constants.HF_HUB_OFFLINE = True  # restored by the fixture's monkeypatch; offline=None would refuse
    file, data = unpinned
    with pytest.raises(ReleaseFileUnavailable, match="offline mode"):
        release_download.fetch(file, progress=False)
    assert release_download.fetch(file, progress=False, offline=False).read_bytes() == data


def test_offline_true_for_a_hub_file_uses_the_cache_only(sources, fresh_cache, shared_ts2):
    file = RELEASE_FILES["metadata.csv"]
    with pytest.raises(ReleaseFileUnavailable, match="metadata.csv"):
        release_download.fetch(file, progress=False, offline=True)
    assert sources.requests == []
    local = release_download.fetch(file, progress=False)
    before = sources.count()
    assert release_download.fetch(file, progress=False, offline=True) == local
    assert sources.count() == before


# --- offline -------------------------------------------------------------------------------------------------------


def test_offline_with_empty_cache_says_what_where_and_how(sources, fresh_cache):
    from huggingface_hub import constants

    constants.HF_HUB_OFFLINE = True  # restored by the fixture's monkeypatch
    names = ["metadata.csv", "raw_answers/mplug_tifa.csv", "paper_table2.csv"]
    with pytest.raises(ReleaseFileUnavailable) as caught:
        release_download.paths(names)
    message = str(caught.value)
    assert message.startswith("3 TS2 release file(s) are not cached and HF_HUB_OFFLINE=1")
    for name in names:
        assert name in message
    assert release.resolved_url(RELEASE_FILES["metadata.csv"]) in message  # where from (here: the test server)
    assert release.resolved_url(RELEASE_FILES["raw_answers/mplug_tifa.csv"]) in message
    assert "TS2_DATA" in message and "ts2 release fetch --all" in message  # where to put them / how to fetch
    assert sources.requests == []  # nothing was even tried


def test_offline_cli_message_has_no_traceback(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(ROOT)}
    env.pop(release.DATA_ENV, None)
    done = subprocess.run([sys.executable, "-m", "scorers.cli", "release", "fetch", "metadata.csv"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("ts2 release: error: 1 TS2 release file(s) are not cached")
    assert "Traceback" not in done.stderr and "TS2_DATA" in done.stderr


# --- a local copy (TS2_DATA / data_dir) ----------------------------------------------------------------------------


def test_ts2_data_short_circuits_downloads(sources, fresh_cache, shared_ts2, monkeypatch):
    monkeypatch.setenv(release.DATA_ENV, str(shared_ts2))
    names = [n for n in RELEASE_FILES if n != "table2_full_precision.csv"]  # every file ../shared/ts2 holds
    found = release_download.paths(names)  # paper_table2.csv included
    assert found == {name: shared_ts2.resolve() / name for name in names}
    assert sources.requests == []
    assert not (fresh_cache / "ts2-evaluate").exists()


def test_data_dir_argument_wins_over_ts2_data(tmp_path, shared_ts2, monkeypatch):
    (tmp_path / "metadata.csv").write_bytes((shared_ts2 / "metadata.csv").read_bytes())
    monkeypatch.setenv(release.DATA_ENV, str(shared_ts2))
    assert release_download.path("metadata.csv", data_dir=tmp_path) == (tmp_path / "metadata.csv").resolve()


def test_local_copy_that_differs_warns_or_fails_when_strict(tmp_path, shared_ts2, caplog):
    edited = (shared_ts2 / "released_scores.csv").read_bytes().replace(b'"3', b"3")
    (tmp_path / "released_scores.csv").write_bytes(edited)
    with caplog.at_level("WARNING", logger="scorers.tables.release"):
        assert release_download.path("released_scores.csv", data_dir=tmp_path) == (tmp_path / "released_scores.csv")
    assert "released_scores.csv differs from the official release file" in caplog.text
    with pytest.raises(ChecksumMismatch, match="released_scores.csv: sha256"):
        release_download.path("released_scores.csv", data_dir=tmp_path, strict=True)


def test_local_copy_missing_files_are_named_together(tmp_path):
    with pytest.raises(ReleaseFileUnavailable, match=r"has no metadata\.csv, raw_answers/llava_dsg\.csv"):
        release_download.paths(["metadata.csv", "raw_answers/llava_dsg.csv"], data_dir=tmp_path)
    with pytest.raises(ReleaseFileUnavailable, match="is not a folder"):
        release_download.path("metadata.csv", data_dir=tmp_path / "nope")
    with pytest.raises(KeyError, match="unknown TS2 release file 'metadata.tsv'"):
        release_download.path("metadata.tsv", data_dir=tmp_path)


# --- the `ts2 release` command -------------------------------------------------------------------------------------


def test_cli_list_then_fetch_all(sources, fresh_cache, capsys):
    assert main(["release", "list"]) == 0
    header, *lines = capsys.readouterr().out.splitlines()[1:]
    assert header.split() == ["name", "status", "sha256", "source"]
    assert [line.split()[0] for line in lines] == list(RELEASE_FILES)
    assert all(line.split()[1] == "missing" for line in lines)
    assert lines[0].split()[2] == RELEASE_FILES["metadata.csv"].sha256

    assert main(["release", "fetch", "--all", "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in out] == list(RELEASE_FILES)
    assert out[-1].startswith("paper_table2.csv\tnot fetched: no public download")

    assert main(["release", "list"]) == 0
    status = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()[2:]}
    assert status == {name: ("cached" if name in DOWNLOADABLE else "missing") for name in RELEASE_FILES}


def test_cli_fetch_all_from_an_incomplete_local_copy_offline_is_one_short_line(shared_ts2, tmp_path, monkeypatch,
                                                                               capsys):
    """``$TS2_DATA`` set, offline: the answer names the folder, what it lacks and the fix, in one short line."""
    import shutil

    from huggingface_hub import constants

    copy = tmp_path / "release"
    shutil.copytree(shared_ts2, copy)
    (copy / "table2_full_precision.csv").unlink(missing_ok=True)
    monkeypatch.setenv("TS2_DATA", str(copy))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["release", "fetch", "--all", "--quiet"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and len(lines[0].replace(str(copy), "DIR")) <= 160, lines
    assert f"$TS2_DATA={copy} lacks table2_full_precision.csv" in lines[0] and "unset TS2_DATA" in lines[0]
    assert "paper_table2.csv" not in lines[0]  # no listing of every release name


def test_cli_list_shows_unpinned_not_none(tmp_path, monkeypatch, capsys):
    """A file whose digest could not be read (trust on first use) shows 'unpinned' in the sha256 column, never None;
    every release file of the real table is pinned."""
    from types import MappingProxyType

    assert all(f.sha256 is not None for f in RELEASE_FILES.values())
    tofu = PinnedFile("https://example.org/owner/repo/abc123/extra.csv", None, "extra.csv", "abc123")
    monkeypatch.setattr(release, "RELEASE_FILES", MappingProxyType({**RELEASE_FILES, "extra.csv": tofu}))
    monkeypatch.delenv(release.DATA_ENV, raising=False)
    assert main(["release", "list"]) == 0
    out = capsys.readouterr().out
    assert "None" not in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert rows["extra.csv"][1:4] == ["missing", "unpinned", "https://example.org/owner/repo/abc123/extra.csv"]
    # the columns line up under the header: every sha256 cell starts where the header's "sha256" does
    header = out.splitlines()[1]
    for line in out.splitlines()[2:]:
        assert line[header.index("sha256"):].split()[0] in {"unpinned", *(f.sha256 for f in RELEASE_FILES.values())}
    (tmp_path / "extra.csv").write_text("a\n")
    assert main(["release", "list", "--data-dir", str(tmp_path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("extra.csv"))
    assert "local (unpinned)" in line and "unpinned" in line.split("local (unpinned)")[1]


def test_cli_list_checks_a_local_copy(tmp_path, shared_ts2, capsys):
    (tmp_path / "metadata.csv").write_bytes((shared_ts2 / "metadata.csv").read_bytes())
    (tmp_path / "released_scores.csv").write_bytes(b"id,image_id\n")
    assert main(["release", "list", "--data-dir", str(tmp_path)]) == 0
    status = {line.split()[0]: line.split()[1:3] for line in capsys.readouterr().out.splitlines()[1:]}
    assert status["metadata.csv"] == ["local", "ok"]
    assert status["released_scores.csv"] == ["local", "differs"]
    assert status["tifa_questions.csv"] == ["local", "missing"]


def test_cli_fetch_out_makes_a_release_folder(sources, fresh_cache, tmp_path, capsys):
    """`ts2 release fetch NAMES --out DIR` prints where each file is (the copies in DIR) and DIR is a release folder:
    the package then reads it as TS2_DATA, every copy matching its pinned sha256 (strict), with no request."""
    names = ["metadata.csv", "per_question/llava_dsg.csv"]
    out = tmp_path / "my-release"
    assert main(["release", "fetch", *names, "--out", str(out), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [f"{name}\t{(out / name).resolve()}" for name in names]
    assert f"TS2_DATA={out.resolve()}" in captured.err
    for name in names:
        assert (out / name).read_bytes() == release_bytes(name)
    served = len(sources.requests)
    assert release_download.paths(names, out, strict=True) == {name: out.resolve() / name for name in names}
    assert len(sources.requests) == served


def test_cli_fetch_needs_names_or_all(capsys):
    assert main(["release", "fetch"]) == 2
    assert "name the files to fetch" in capsys.readouterr().err


def test_readme_release_commands_run(sources, fresh_cache, shared_ts2, monkeypatch, capsys):
    page = (ROOT / "docs" / "judge-a-metric.md").read_text(encoding="utf-8")
    section = page.split("### Release tables on demand", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]
    assert len(commands) >= 3
    for command in commands:
        words = shlex.split(command.replace("path/to/ts2", str(shared_ts2)))
        with monkeypatch.context() as scoped:
            while "=" in words[0]:
                key, value = words.pop(0).split("=", 1)
                scoped.setenv(key, value)
            assert words[0] == "ts2", command
            assert main(words[1:]) == 0, command
        capsys.readouterr()


def test_readme_release_python_block_runs(sources, fresh_cache, shared_ts2):
    page = (ROOT / "docs" / "judge-a-metric.md").read_text(encoding="utf-8")
    section = page.split("### Release tables on demand", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(compile(code.replace("path/to/ts2", str(shared_ts2)), "docs/judge-a-metric.md", "exec"), namespace)
    assert namespace["release_download"].path("metadata.csv").read_bytes() == (shared_ts2 / "metadata.csv").read_bytes()
    assert sources.count("metadata.csv") == 2  # downloaded once by the block (HEAD + GET), then reused
