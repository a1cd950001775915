"""Images turned upright, stripped, downscaled and re-encoded; bombs refused
before they are decoded (chat.files.images)."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from chat.files.refusals import Refused
from chat.files.uploads import Limits, prepare
from tests.files import samples

LIMITS = Limits(max_bytes=20 * 1024 * 1024, max_pixels=50_000_000, image_max_side=100)


def test_a_photo_is_turned_upright_and_loses_its_metadata():
    data = samples.jpeg_with_exif(60, 40, orientation=6)
    assert b"Secret Phone 12" in data
    prepared = prepare("IMG_0001.JPG", data, LIMITS)
    assert prepared.content_type == "image/jpeg"
    with Image.open(io.BytesIO(prepared.data)) as image:
        assert image.size == (40, 60)  # turned a quarter
        assert not image.getexif()
        assert "exif" not in image.info and "icc_profile" not in image.info
    assert b"Secret Phone 12" not in prepared.data


def test_a_large_image_is_downscaled_to_the_models_limit_with_a_thumbnail():
    prepared = prepare("wide.png", samples.png(400, 200), LIMITS)
    with Image.open(io.BytesIO(prepared.data)) as image:
        assert image.size == (100, 50)
    assert prepared.thumbnail is not None


def test_transparency_is_kept_as_png():
    prepared = prepare("logo.png", samples.png(10, 10, (0, 0, 0, 0), "RGBA"), LIMITS)
    assert prepared.content_type == "image/png"
    with Image.open(io.BytesIO(prepared.data)) as image:
        assert image.mode == "RGBA"


def test_a_decompression_bomb_is_refused_before_it_is_decoded():
    data = samples.bomb_png(12_000)  # 144 million pixels in a few kB
    assert len(data) < 100_000
    with pytest.raises(Refused) as refused:
        prepare("tiny.png", data, LIMITS)
    assert "too many pixels to open safely" in refused.value.message


def test_a_truncated_image_is_refused_clearly():
    data = samples.png(300, 300, "green")
    noisy = Image.effect_noise((300, 300), 50).convert("RGB")
    out = io.BytesIO()
    noisy.save(out, "PNG")
    data = out.getvalue()
    with pytest.raises(Refused, match="damaged or cut short"):
        prepare("cut.png", data[: len(data) // 2], LIMITS)
