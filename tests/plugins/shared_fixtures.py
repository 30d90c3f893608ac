"""Fixtures shared by test modules of several folders (a plugin; tests/conftest.py registers it): an empty Hugging
Face home, the loopback release sources, the demo's settings on the release tables, a tiny diffusers pipeline, and
the session's one local Ray and Serve proxy."""
from __future__ import annotations

import json

import pytest

from tests.helpers.environment import use_hf_home
from tests.helpers.ray_session import local_ray, serve_port  # noqa: F401  (global fixtures: one Ray per run)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty HF_HOME for this test (env for subprocesses, huggingface_hub constants for this process)."""
    from scorers.tables import release

    monkeypatch.delenv(release.DATA_ENV, raising=False)
    return use_hf_home(monkeypatch, tmp_path / "hf")


@pytest.fixture
def sources(shared_ts2, monkeypatch):
    """The loopback release sources (tests/helpers/release_sources.py), online mode, HF_ENDPOINT and TS2_GITHUB_URL
    pointing at it; stopped at teardown."""
    from huggingface_hub import constants

    from scorers.tables import release
    from tests.helpers.release_sources import start_sources

    server = start_sources()
    monkeypatch.setenv("HF_ENDPOINT", server.base)
    monkeypatch.setenv(release.GITHUB_ENV, server.base)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def config(shared_ts2):
    """The demo's settings (``AppConfig``) on the release's metadata, released scores and Table 2."""
    from scorers.demo import AppConfig

    return AppConfig.resolve(metadata=shared_ts2 / "metadata.csv", scores_csv=shared_ts2 / "released_scores.csv",
                             paper_table=shared_ts2 / "paper_table2.csv")


@pytest.fixture(scope="session")
def pipeline_dir(tmp_path_factory):
    """UNet2DConditionModel + AutoencoderKL + CLIPTextModel (hidden 32) + DDIM, real CLIP BPE from open_clip."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    from tests.helpers.tiny_embed_models import clip_tokenizer

    torch.manual_seed(0)
    tokenizer = clip_tokenizer()
    unet = UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(8, 16),
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32, norm_num_groups=4, attention_head_dim=4)
    vae = AutoencoderKL(block_out_channels=(8, 16), in_channels=3, out_channels=3, latent_channels=4,
                        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                        norm_num_groups=4, sample_size=32)
    text_encoder = CLIPTextModel(CLIPTextConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
        max_position_embeddings=77, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id))
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
                              set_alpha_to_one=False)
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet,
                                   scheduler=scheduler, safety_checker=None, feature_extractor=None,
                                   requires_safety_checker=False)
    path = tmp_path_factory.mktemp("tiny-sd")
    pipe.save_pretrained(path)
    config = path / "tokenizer" / "tokenizer_config.json"  # SD pads prompts to the tokenizer's max length: CLIP's 77
    config.write_text(json.dumps({**json.loads(config.read_text()), "model_max_length": 77}))
    return path
