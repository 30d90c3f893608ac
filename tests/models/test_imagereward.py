"""ImageReward's model file: the backend at reduced precision (the head runs in the model's dtype)."""
from __future__ import annotations

import numpy as np


def test_bf16_backend_scores_and_stays_near_fp32(tmp_path):
    """The whole model, head included, is cast to bf16: the MLP head gets features of its own dtype (not float32)."""
    import torch  # here, not at collection (tests/project/test_quick_tier.py)

    from scorers.models.imagereward import ImageRewardBackend
    from tests.helpers.tiny_reward_models import build_imagereward

    folder = build_imagereward(tmp_path)
    torch.manual_seed(0)
    pixels = torch.randn(3, 3, 32, 32)
    prompts = ["a red cube", "two cats on a sofa", "a red cube"]
    full = ImageRewardBackend(folder, device="cpu", precision="fp32").raw_rewards(pixels, prompts).numpy()
    half = ImageRewardBackend(folder, device="cpu", precision="bf16").raw_rewards(pixels, prompts)
    assert half.dtype == torch.float32 and half.shape == (3,)
    # bf16 keeps 8 significant bits: each reward within a few percent of the fp32 one's scale
    np.testing.assert_allclose(half.numpy(), full, rtol=0, atol=0.05 * max(1.0, float(np.abs(full).max())))
