"""The SEG explorer draws a built dir's own edges (its segs.json), and TS2's level pairs without one."""
import shutil

from tests.helpers.seg_files import build_walks_dir


def _explorer(metadata_path, data_dir):
    from scorers.demo.config import AppConfig
    from scorers.demo.explorer import SegExplorer
    from scorers.demo.sources import ImageSource, Tables
    from scorers.tables.pandas_tables import read_metadata

    config = AppConfig(metadata=metadata_path, data_dir=data_dir)
    tables = Tables(metadata=read_metadata(metadata_path), paths={"metadata": metadata_path})
    return SegExplorer(tables, None, ImageSource(config))


def _drawn(figure) -> int:
    return len(figure.axes[0].lines)  # one line per edge drawn


def test_explorer_draws_the_built_edges(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    out, _ = build_walks_dir(tmp_path, capsys)
    explorer = _explorer(out / "metadata.csv", out)
    assert _drawn(explorer.figure(0)) == 4  # 0-1a, 0-1b, 1a-2a, 1b-2b
    assert explorer.segs[0].walks() == [("0", "1a", "2a"), ("0", "1b", "2b")]
    assert "2 walk(s) along its edges" in explorer.summary_markdown(0, None)

    bare = tmp_path / "bare"
    shutil.copytree(out, bare)
    (bare / "segs.json").unlink()
    assert _drawn(_explorer(bare / "metadata.csv", bare).figure(0)) == 6  # every pair of adjacent levels
