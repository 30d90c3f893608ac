"""docs/scorers/scale.md's cluster recipes that cannot run here (KubeRay, ``ray up``) are at least well-formed and
consistent: their YAML parses, the ``RayCluster`` runs the image that the page's Dockerfile builds on every node, with
the Ray version the package is tested with, and the ``ray up`` cluster installs the extras on every node and starts
Ray with token authentication. The loopback recipe runs in tests/scoring/test_ray_cluster.py."""
from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.environment import skip_module_without

skip_module_without("yaml")

import yaml  # noqa: E402

PAGE = Path(__file__).resolve().parents[2] / "docs" / "scorers" / "scale.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_kuberay_manifest_runs_the_pages_image_on_every_node():
    (dockerfile,) = _blocks("dockerfile")
    base = re.search(r"^FROM rayproject/ray:(\S+)-py\d+$", dockerfile, re.M).group(1)
    assert re.search(r'^RUN pip install .*\[models,ray\]', dockerfile, re.M)
    (cluster,) = [doc for doc in map(yaml.safe_load, _blocks("yaml")) if doc.get("kind") == "RayCluster"]
    assert cluster["apiVersion"] == "ray.io/v1" and cluster["spec"]["rayVersion"] == base
    groups = [cluster["spec"]["headGroupSpec"], *cluster["spec"]["workerGroupSpecs"]]
    containers = [c for group in groups for c in group["template"]["spec"]["containers"]]
    built = re.search(r"docker build -t (\S+) ", PAGE.read_text(encoding="utf-8")).group(1)
    assert len(containers) == 2 and {c["image"] for c in containers} == {built}
    for container in containers:  # token authentication on every node, the token from a Secret
        env = {e["name"]: e for e in container["env"]}
        assert env["RAY_AUTH_MODE"]["value"] == "token" and "secretKeyRef" in env["RAY_AUTH_TOKEN"]["valueFrom"]


def test_the_ray_up_cluster_installs_the_extras_and_starts_ray_with_token_authentication():
    (launcher,) = [doc for doc in map(yaml.safe_load, _blocks("yaml")) if "cluster_name" in doc]
    assert any("[models,ray]" in command for command in launcher["setup_commands"])
    starts = launcher["head_start_ray_commands"] + launcher["worker_start_ray_commands"]
    assert [c for c in starts if "ray start" in c] and all(c.startswith("RAY_AUTH_MODE=token ")
                                                           for c in starts if "ray start" in c)
    assert launcher["head_node_type"] in launcher["available_node_types"]
