"""Demo uploads: an image above the pixel cap is refused from its header (a 100-megapixel PNG is a
few KB on disk and ~300 MB decoded), an unreadable file gets a readable message, and the image input hands the
handler the file's path without decoding it."""
from __future__ import annotations


import numpy as np
import pytest
from PIL import Image

from scorers.demo.upload_scoring import MAX_IMAGE_PIXELS, open_upload, score_image


class _Constant:
    def score(self, images, prompts):
        assert all(image.mode == "RGB" for image in images)
        return np.full(len(images), 0.25)


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    """A 10,000 x 10,000 one-bit PNG: 100 megapixels in a few kilobytes."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.png"
    Image.new("1", (10_000, 10_000)).save(path)
    assert path.stat().st_size < 200_000
    return path


def test_a_100_megapixel_upload_is_refused_before_decoding(bomb, monkeypatch):
    from PIL import ImageFile

    assert 10_000 * 10_000 > MAX_IMAGE_PIXELS and MAX_IMAGE_PIXELS < Image.MAX_IMAGE_PIXELS / 2

    def no_decoding(self):
        raise AssertionError("pixels decoded")

    monkeypatch.setattr(ImageFile.ImageFile, "load", no_decoding)  # the header alone must decide
    with pytest.raises(ValueError, match=r"the image is 10000 x 10000 px \(100 megapixels\); at most 25 megapixels"):
        score_image(_Constant(), str(bomb), "a cat")
    monkeypatch.undo()
    with pytest.raises(ValueError, match="100 megapixels"):
        open_upload(Image.new("1", (10_000, 10_000)))  # an in-memory image (the Python API) is held to it too


@pytest.mark.parametrize("content", [b"", b"not an image at all", "truncated"])
def test_an_unreadable_upload_gets_a_readable_message(tmp_path, content):
    path = tmp_path / "upload.png"
    if content == "truncated":
        whole = tmp_path / "whole.png"
        Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(whole)
        content = whole.read_bytes()[:400]
    path.write_bytes(content)
    with pytest.raises(ValueError, match="cannot read the upload as an image .*; upload a PNG, JPEG or WebP file"):
        score_image(_Constant(), str(path), "a cat")


def test_a_readable_upload_path_is_scored(tmp_path):
    path = tmp_path / "ok.png"
    Image.new("RGBA", (20, 10), (10, 20, 30, 128)).save(path)
    assert score_image(_Constant(), str(path), "a cat").score == 0.25
    assert score_image(_Constant(), Image.new("L", (8, 8)), "a cat").score == 0.25


def test_image_input_passes_the_path_without_opening_it(tmp_path):
    pytest.importorskip("gradio")
    from gradio.data_classes import ImageData

    from scorers.demo.score_tab import UploadedImage

    garbage = tmp_path / "upload.png"
    garbage.write_bytes(b"not an image at all")
    component = UploadedImage(type="filepath", image_mode=None)
    assert component.get_block_name() == "image"  # drawn by gradio's Image front end
    assert component.preprocess(ImageData(path=str(garbage), orig_name="upload.png")) == str(garbage)
    assert component.preprocess(None) is None


def test_a_model_error_names_the_demos_field(tmp_path):
    from scorers.errors import ParameterError
    from scorers.demo.config import AppConfig
    from scorers.demo.upload_scoring import LazyScorer, ScorerSpec, demo_wording, scorer_specs

    missing = str(tmp_path / "no_such_clip")
    slot = LazyScorer(scorer_specs(AppConfig(clip_model=missing))["CLIPScore"])
    with pytest.raises(RuntimeError):
        slot.get()
    assert slot.status() == (f"**Error:** CLIPScore failed to load from `{missing}`: ModelLoadError: --clip-model "
                             f"{missing}: no such folder (a local model folder, or a Hub id like owner/name)")
    # the demo's own labels: the model's flag; a parameter the demo has no control for keeps its Python name
    spec = ScorerSpec("TIFA", lambda: None, "m", option="--vlm")
    error = ParameterError("{model=}: no weights; pass {pretrained=FILE}", model="x")
    assert demo_wording(error, spec) == "--vlm x: no weights; pass pretrained=FILE"
    assert demo_wording(ValueError("plain"), spec) == "plain"
