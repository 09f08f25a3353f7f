"""File previews made with Pillow (service interface, "Downloads and previews").

Images (jpeg, png, gif, webp, heic by mime type) are decoded and transformed in the service's
order: crop, opacity, background, border, border radius, rotation; then encoded as `output`.
Other files, and images above the preview size limit, get a drawn placeholder icon on an
`eceff1` background (unless `background` is given), PNG unless `output` says otherwise.

>>> options = PreviewOptions(width=64, output="webp")
>>> data, media_type = render_preview(path, "image/png", size, "cat.png", options)  # doctest: +SKIP
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageOps, UnidentifiedImageError

from ...wire._errors import ServiceError

PREVIEW_INPUTS = frozenset({"image/jpeg", "image/png", "image/heic", "image/webp", "image/gif"})
PREVIEW_SIZE_LIMIT = 20_000_000
PLACEHOLDER_BACKGROUND = "eceff1"
GRAVITIES = {
    "center": (0.5, 0.5),
    "top-left": (0.0, 0.0),
    "top": (0.5, 0.0),
    "top-right": (1.0, 0.0),
    "left": (0.0, 0.5),
    "right": (1.0, 0.5),
    "bottom-left": (0.0, 1.0),
    "bottom": (0.5, 1.0),
    "bottom-right": (1.0, 1.0),
}
OUTPUTS = ("jpg", "jpeg", "png", "webp", "heic", "avif", "gif")
#: Pillow format and media type of each output this service can write (not heic).
_ENCODERS = {
    "jpg": ("JPEG", "image/jpeg"),
    "jpeg": ("JPEG", "image/jpeg"),
    "png": ("PNG", "image/png"),
    "webp": ("WEBP", "image/webp"),
    "avif": ("AVIF", "image/avif"),
    "gif": ("GIF", "image/gif"),
}
_ICON_SIZE = 256
_ICON_INK = (144, 164, 174, 255)


@dataclass(frozen=True)
class PreviewOptions:
    """The preview query parameters, validated (colours are hex without `#`)."""

    width: int = 0
    height: int = 0
    gravity: str = "center"
    quality: int = -1
    border_width: int = 0
    border_color: str = ""
    border_radius: int = 0
    opacity: float = 1.0
    rotation: int = 0
    background: str = ""
    output: str = ""


def render_preview(
    source: Path, mime: str, size: int, name: str, options: PreviewOptions
) -> tuple[bytes, str]:
    """The preview's bytes and media type."""
    background = options.background
    if mime in PREVIEW_INPUTS and size <= PREVIEW_SIZE_LIMIT:
        image = _decode(source)
        extension = Path(name).suffix[1:].lower()
        default_output = extension if extension in _ENCODERS else "jpg"
    else:
        image = placeholder_icon(mime)
        background = background or PLACEHOLDER_BACKGROUND
        default_output = "png"
    output = options.output or default_output
    if output not in _ENCODERS:
        raise ServiceError(
            "storage_file_type_unsupported",
            f"The local service cannot write {output} previews: ask for one of "
            f"{', '.join(_ENCODERS)}.",
        )
    image = _transform(image, options, background)
    return _encode(image, output, options.quality)


def _decode(source: Path) -> Image.Image:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(source) as opened:
                opened.seek(0)
                return opened.convert("RGBA")
    except Image.DecompressionBombError:
        raise ServiceError(
            "storage_image_resolution_exceeded", "Image resolution is too large to preview."
        ) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError):
        raise ServiceError(
            "storage_file_type_unsupported", "The file could not be decoded as an image."
        ) from None


def _transform(image: Image.Image, options: PreviewOptions, background: str) -> Image.Image:
    image = _crop(image, options.width, options.height, options.gravity)
    if options.opacity < 1:
        alpha = image.getchannel("A").point(lambda value: round(value * options.opacity))
        image.putalpha(alpha)
    if background:
        flat = Image.new("RGBA", image.size, _rgba(background))
        image = Image.alpha_composite(flat, image)
    if options.border_width:
        color = _rgba(options.border_color or "000000")
        image = ImageOps.expand(image, border=options.border_width, fill=color)
    if options.border_radius:
        mask = Image.new("L", image.size, 0)
        ImageDraw.Draw(mask).rounded_rectangle(
            (0, 0, image.width - 1, image.height - 1), radius=options.border_radius, fill=255
        )
        alpha = Image.new("L", image.size, 0)
        alpha.paste(image.getchannel("A"), mask=mask)
        image.putalpha(alpha)
    if options.rotation % 360:
        clockwise = (options.rotation + 360) % 360
        image = image.rotate(-clockwise, expand=True, fillcolor=(0, 0, 0, 0))
    return image


def _crop(image: Image.Image, width: int, height: int, gravity: str) -> Image.Image:
    """Both sides: scale to cover and crop at `gravity`; one side: scale keeping the ratio."""
    if width and height:
        return ImageOps.fit(image, (width, height), centering=GRAVITIES[gravity])
    if width:
        return image.resize((width, max(1, round(image.height * width / image.width))))
    if height:
        return image.resize((max(1, round(image.width * height / image.height)), height))
    return image


def _encode(image: Image.Image, output: str, quality: int) -> tuple[bytes, str]:
    fmt, media_type = _ENCODERS[output]
    if fmt == "JPEG":  # no alpha in JPEG: flatten on white
        flat = Image.new("RGBA", image.size, (255, 255, 255, 255))
        image = Image.alpha_composite(flat, image).convert("RGB")
    options: dict[str, int] = {}
    if quality >= 0 and fmt in ("JPEG", "WEBP", "AVIF"):
        options["quality"] = quality
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue(), media_type


def _rgba(hex_color: str) -> tuple[int, int, int, int]:
    """`"eceff1"` or `"fff"` → an RGBA tuple."""
    digits = hex_color if len(hex_color) == 6 else "".join(c * 2 for c in hex_color)
    red, green, blue = (int(digits[i : i + 2], 16) for i in (0, 2, 4))
    return red, green, blue, 255


def placeholder_icon(mime: str) -> Image.Image:
    """A transparent square with a drawn page; a play mark for video, a landscape for images."""
    icon = Image.new("RGBA", (_ICON_SIZE, _ICON_SIZE), (0, 0, 0, 0))
    draw = ImageDraw.Draw(icon)
    left, top, right, bottom, fold = 64, 40, 192, 216, 40
    draw.polygon(
        [(left, top), (right - fold, top), (right, top + fold), (right, bottom), (left, bottom)],
        outline=_ICON_INK,
        width=8,
    )
    draw.line([(right - fold, top), (right - fold, top + fold), (right, top + fold)], _ICON_INK, 8)
    if mime.startswith("video/"):
        draw.polygon([(108, 100), (108, 172), (164, 136)], fill=_ICON_INK)
    elif mime.startswith("image/"):
        draw.polygon([(84, 190), (118, 130), (146, 170), (160, 150), (176, 190)], fill=_ICON_INK)
        draw.ellipse((142, 96, 166, 120), fill=_ICON_INK)
    else:
        for y in (110, 136, 162, 188):
            draw.line([(88, y), (168, y)], _ICON_INK, 8)
    return icon
