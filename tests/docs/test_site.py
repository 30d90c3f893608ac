"""The documentation site and the short README.

The README keeps the first hour (at most 250 lines); the rest is an MkDocs site under docs/ (mkdocs.yml), built with
``mkdocs build --strict`` in CI (.ci/run). Every page is in the navigation, no page or README command names a path
that exists only in this workplace (``../shared``), and the README's links into the site resolve. That every command
and Python block of these pages runs is tests/docs/test_commands.py's job.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
MAX_README_LINES = 250  # issue 34: "Cut the README to the first hour, at most 250 lines"


def site_pages() -> list[Path]:
    """Every page of the site: docs/**/*.md except docs/_incoming (other branches' notes, excluded in mkdocs.yml)
    and docs/assets (generated tables, excluded too)."""
    return sorted(p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0] not in ("_incoming", "assets"))


def nav_pages(entries) -> list[str]:
    """The page paths named anywhere in mkdocs.yml's nav (nested sections included)."""
    found = []
    for entry in entries:
        if isinstance(entry, str):
            found.append(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                found += nav_pages(value) if isinstance(value, list) else [value]
    return found


def config() -> dict:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move the rest into docs/"


def test_readme_keeps_the_first_hour():
    """What issue 34 keeps in the README: install (with CPU-only torch), the three commands, the worked example,
    the set-up, the leaderboard with the reward models marked as not measured, and a link per capability."""
    text = README.read_text(encoding="utf-8")
    for heading in ("## Install and the three main commands", "## A worked example in one minute", "## Set up",
                    "## Leaderboard"):
        assert heading + "\n" in text, heading
    assert "--index-url https://download.pytorch.org/whl/cpu" in text
    for command in ("ts2 score clip_score --out clip.csv", "ts2 meta clip.csv --column clip_score",
                    "ts2 report clip.csv"):
        assert command in text, command
    rewards = ("PickScore", "HPSv2.1", "ImageReward", "HPSv3", "UnifiedReward")
    for name in rewards:
        row = next((line for line in text.splitlines() if line.startswith(f"| {name} |")), None)
        assert row is not None and "not measured here" in row, name
    for page in ("judge-a-metric.md", "scorers/index.md", "human-agreement.md", "rewards.md", "reports.md",
                 "build-your-own-segs.md", "reproduce.md", "architecture.md", "contributing.md"):
        assert f"](docs/{page})" in text, f"the README links no capability paragraph to docs/{page}"


def test_no_page_uses_a_shared_path():
    """``../shared`` exists only in this workplace: a user reaches the release through TS2_DATA or ``ts2 release``."""
    offenders = [f"{page.relative_to(ROOT)}:{n}" for page in [README] + site_pages()
                 for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1) if "../shared" in line]
    assert not offenders, offenders


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    nav = nav_pages(config()["nav"])
    pages = {p.relative_to(DOCS).as_posix() for p in site_pages()}
    assert sorted(set(nav) - pages) == [], "mkdocs.yml nav names pages that do not exist"
    assert sorted(pages - set(nav)) == [], "pages missing from mkdocs.yml nav"
    assert len(nav) == len(set(nav)), "a page is in the nav twice"


def test_readme_links_into_the_site_resolve():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\((docs/[^)#\s]+)", text)
    assert targets
    missing = [t for t in targets if not (ROOT / t).is_file()]
    assert not missing, missing


def test_api_reference_renders_from_docstrings():
    cfg = config()
    plugins = [p if isinstance(p, str) else next(iter(p)) for p in cfg["plugins"]]
    assert "mkdocstrings" in plugins and cfg["theme"]["name"] == "material"
    api = (DOCS / "reference" / "api.md").read_text(encoding="utf-8")
    assert "::: scorers\n" in api and "::: scorers.rewards\n" in api


def test_docs_extra_is_in_dev_and_ci_builds_strict():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[]", r, maxsplit=1)[0] for r in extras["docs"]}
    assert {"mkdocs-material", "mkdocstrings"} <= names
    assert any(r.startswith("ts2-evaluate[") and "docs" in r for r in extras["dev"])
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^\.venv/bin/mkdocs build --strict --site-dir ", ci, re.M)
    assert "site/" in (ROOT / ".gitignore").read_text().splitlines()


def test_mkdocs_build_strict(tmp_path):
    """The site builds with --strict (a broken link or anchor, a page outside the nav, a docstring mkdocstrings cannot
    render: each is an error), into a temporary folder."""
    pytest.importorskip("mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'")
    pytest.importorskip("material", reason="the docs extra is not installed: pip install -e '.[docs]'")
    pytest.importorskip("mkdocstrings", reason="the docs extra is not installed: pip install -e '.[docs]'")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "api" / "index.html").is_file()
    api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert "ts2_meta" in api and "RemoteReward" in api  # rendered from the docstrings


def test_segs_json_is_described_as_one_json_document():
    """``segs.json`` is one JSON document (``json.load`` reads it), never "one SEG per line" or JSON lines."""
    for page in [README, *site_pages()]:
        text = " ".join(page.read_text(encoding="utf-8").split())
        for match in re.finditer(r"segs\.json", text):
            near = text[match.start():match.start() + 120].lower()
            assert not re.search(r"per line|json lines|jsonl", near), (page, near)
