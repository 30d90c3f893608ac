"""TIFA as an `evaluate` metric: a thin wrapper over ``scorers.qga.scorers.TIFAScorer`` and the shared runner."""
import datasets
import evaluate
from scorers.qga.matching import DEFAULT_SBERT
from scorers.qga.scorers import DEFAULT_VQA_MODEL
from scorers.qga.scorers import TIFAScorer
from scorers.runner import run

_CITATION = """\
@inproceedings{hu2023tifa,
  title     = {TIFA: Accurate and Interpretable Text-to-Image Faithfulness Evaluation with Question Answering},
  author    = {Hu, Yushi and Liu, Benlin and Kasai, Jungo and Wang, Yizhong and Ostendorf, Mari and Krishna, Ranjay
               and Smith, Noah A.},
  booktitle = {ICCV},
  year      = {2023}
}
"""

_DESCRIPTION = """\
TIFA: ask a VQA model each of the prompt's questions about the image, map each free-form answer onto the question's
choices (yes/no: "yes" in the answer; multiple choice: nearest choice by SBERT cosine) and score the fraction answered
correctly. The config name is the VQA checkpoint (default Salesforce/blip-vqa-base; any BLIP VQA, InstructBLIP,
LLaVA-1.5 or AutoModelForImageTextToText chat VLM). Questions come from a TS2-layout question table (`questions=`
at load time), looked up by prompt.
"""

_KWARGS_DESCRIPTION = """
Args:
    images (`list` of PIL images or paths): the images.
    prompts (`list` of `str`): one prompt per image; each must have questions in the question table.
    batch_size (`int`, defaults to 8): images per scorer call (all their questions are answered in batched forwards).
Returns:
    scores (`list` of `float`): fraction of questions answered correctly, per image.
    mean (`float`): their mean.
    records (`list` of `dict`): per image, `failed_questions` and `questions`
        (question, expected, answer, chosen, correct for each question).
Examples:
    >>> tifa = evaluate.load("evaluate_modules/tifa_score", questions="tifa_questions.csv")
    >>> out = tifa.compute(images=["images/000-00.jpg"], prompts=["A Christmas tree with lights and teddy bear"])
    >>> sorted(out)
    ['mean', 'records', 'scores']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class TifaScore(evaluate.Metric):
    """TIFA score per image, its mean and the per-question records."""

    _scorer_class = TIFAScorer

    def __init__(self, *args, questions=None, vqa_backend="auto", sbert=DEFAULT_SBERT, device=None, precision=None,
                 accumulate="dsg", **kwargs):
        super().__init__(*args, **kwargs)
        self._options = {"questions": questions, "vqa_backend": vqa_backend, "sbert": sbert, "device": device,
                         "precision": precision}
        if self._scorer_class.rule == "dsg":
            self._options["accumulate"] = accumulate
        self._scorer = None

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"images": datasets.Image(), "prompts": datasets.Value("string")}),
            reference_urls=["https://arxiv.org/abs/2303.11897", "https://github.com/Yushi-Hu/tifa"],
        )

    def _compute(self, images, prompts, batch_size=8):
        if self._scorer is None:
            model = DEFAULT_VQA_MODEL if self.config_name == "default" else self.config_name
            self._scorer = self._scorer_class(model=model, **self._options)
        result = run(self._scorer, images, prompts, batch_size=batch_size, num_workers=0, progress=False)
        scores = result.scores.tolist()
        return {"scores": scores, "mean": float(sum(scores) / len(scores)) if scores else float("nan"),
                "records": result.records}
