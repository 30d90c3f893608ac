"""Only what pyproject.toml cannot say: scorers/* plus the dataset builder mapped in as scorers._dataset_script.

Everything else (metadata, dependencies, extras, the `ts2` script, the version from scorers/__init__.py) is in
pyproject.toml.
"""
from setuptools import find_packages, setup

setup(
    # the dataset builder ships inside the wheel as scorers/_dataset_script/ so `load_ts2` finds it in any install
    packages=find_packages(include=["scorers", "scorers.*"]) + ["scorers._dataset_script"],
    package_dir={"scorers._dataset_script": "dataset_script/ts2"},
)
