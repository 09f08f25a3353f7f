"""Compressed answers over real HTTP: the encoding each `Accept-Encoding` form chooses, the
service's levels and formats, the 1024-byte threshold, the types never compressed, the
headers, and `compression=False`. What the frameport client asks for and reads is tested in
`tests/test_wire_encoding.py`, through a relay that sees each answer's encoding.

Raw bodies are read with `iter_raw` (what came over the wire) and decoded here with the
libraries themselves, so a wrong format or level cannot pass.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from typing import Any

import brotli
import httpx
import pytest
import zstandard
from storage_helpers import create_bucket, download, upload
from tablesdb_helpers import create_database, create_table, key_client, ok

from frameport.local import LocalService

DB, TABLE = "zdb", "notes"
ROWS = f"/tablesdb/{DB}/tables/{TABLE}/rows"
TEXT_COLUMN = {"key": "text", "type": "string", "size": 9000, "required": False}


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService() as svc:
        yield svc


@pytest.fixture(scope="module")
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        create_database(client, DB)
        create_table(client, DB, TABLE, [TEXT_COLUMN])
        rows = [{"$id": f"n{i}", "text": f"note {i} " * 40} for i in range(50)]
        ok(client.post(ROWS, json={"rows": rows}), 201)
        yield client


def raw_get(
    client: httpx.Client, path: str, accept_encoding: str | None, **options: Any
) -> tuple[httpx.Response, bytes]:
    """The answer and its body exactly as sent; `None` sends no `Accept-Encoding` at all."""
    request = client.build_request("GET", path, **options)
    del request.headers["Accept-Encoding"]
    if accept_encoding is not None:
        request.headers["Accept-Encoding"] = accept_encoding
    response = client.send(request, stream=True)
    try:
        return response, b"".join(response.iter_raw())
    finally:
        response.close()


CHOICES = [
    (None, None),
    ("", None),
    ("gzip", "gzip"),
    ("deflate", "deflate"),
    ("br", "br"),
    ("zstd", "zstd"),
    ("GZIP", "gzip"),
    ("gzip, deflate", "gzip"),
    ("gzip, deflate, br", "gzip"),
    ("gzip, deflate, br, zstd", "gzip"),
    ("br, gzip", "br"),
    ("deflate, gzip", "deflate"),
    ("zstd, br, gzip, deflate", "zstd"),
    ("gzip;q=0.5, zstd", "zstd"),
    ("zstd;q=0.1, br;q=0.9, gzip;q=0.5", "br"),
    ("gzip;q=1.0, br;q=1", "gzip"),
    ("*", None),
    ("*, gzip", "gzip"),
    ("*;q=1, deflate;q=0.2", "deflate"),
    ("identity", None),
    ("identity, gzip", None),
    ("gzip, identity", "gzip"),
    ("identity;q=0.5, gzip", "gzip"),
    ("gzip;q=0", "gzip"),
    ("gzip;q=0, br", "br"),
    ("br;q=0, gzip;q=0", "br"),
    ("identity;q=0, gzip;q=0", None),
    ("compress, sdch", None),
    ("compress, x-gzip, br;q=0.3", "br"),
    ("gzip;q=abc, deflate;q=0.1", "deflate"),
    ("zstd ; q=0.8 ,gzip;q=0.9", "gzip"),
]


@pytest.mark.parametrize(("accept_encoding", "chosen"), CHOICES)
def test_the_encoding_each_accept_encoding_chooses(
    admin: httpx.Client, accept_encoding: str | None, chosen: str | None
) -> None:
    response, raw = raw_get(admin, ROWS, accept_encoding, params={"queries[]": LIMIT_50})
    assert response.status_code == 200
    assert response.headers.get("content-encoding") == chosen
    assert int(response.headers["content-length"]) == len(raw)
    body = decode(raw, chosen)
    assert len(json.loads(body)["rows"]) == 50
    if chosen is None:
        assert "vary" not in response.headers
    else:
        assert response.headers["vary"] == "Accept-Encoding"
        assert len(raw) < len(body)


LIMIT_50 = json.dumps({"method": "limit", "values": [50]})


def decode(raw: bytes, encoding: str | None) -> bytes:
    if encoding is None:
        return raw
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "deflate":
        return zlib.decompress(raw, wbits=-zlib.MAX_WBITS)
    if encoding == "br":
        return bytes(brotli.decompress(raw))
    return zstandard.ZstdDecompressor().decompress(raw)


def test_each_encoding_is_made_at_the_service_level(admin: httpx.Client) -> None:
    _, plain = raw_get(admin, ROWS, None, params={"queries[]": LIMIT_50})
    gzip_level_6 = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    raw_deflate_6 = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    expected = {
        "zstd": zstandard.ZstdCompressor(level=3).compress(plain),
        "br": brotli.compress(plain, quality=4),
        "gzip": gzip_level_6.compress(plain) + gzip_level_6.flush(),
        "deflate": raw_deflate_6.compress(plain) + raw_deflate_6.flush(),
    }
    for encoding, wanted in expected.items():
        _, raw = raw_get(admin, ROWS, encoding, params={"queries[]": LIMIT_50})
        assert raw == wanted, encoding
    _, deflated = raw_get(admin, ROWS, "deflate", params={"queries[]": LIMIT_50})
    with pytest.raises(zlib.error):  # raw deflate: no zlib header
        zlib.decompress(deflated)


def test_only_bodies_longer_than_1024_bytes_are_compressed(admin: httpx.Client) -> None:
    ok(admin.post(ROWS, json={"rowId": "edge", "data": {"text": "x"}}), 201)
    _, plain = raw_get(admin, f"{ROWS}/edge", None)
    padding = 1024 - len(plain)
    ok(admin.patch(f"{ROWS}/edge", json={"data": {"text": "x" * (1 + padding)}}))
    at_limit, raw = raw_get(admin, f"{ROWS}/edge", "gzip")
    assert len(raw) == 1024 and "content-encoding" not in at_limit.headers
    ok(admin.patch(f"{ROWS}/edge", json={"data": {"text": "x" * (2 + padding)}}))
    over, raw = raw_get(admin, f"{ROWS}/edge", "gzip")
    assert over.headers["content-encoding"] == "gzip"
    assert len(gzip.decompress(raw)) == 1025


def test_small_and_empty_answers_stay_plain(admin: httpx.Client) -> None:
    response, raw = raw_get(admin, "/tablesdb", "gzip")
    assert response.status_code == 200 and len(raw) <= 1024
    assert "content-encoding" not in response.headers
    deleted = admin.delete(f"{ROWS}/n49", headers={"Accept-Encoding": "gzip"})
    assert deleted.status_code == 204 and "content-encoding" not in deleted.headers


def test_files_are_never_compressed_whatever_their_type(admin: httpx.Client) -> None:
    create_bucket(admin, "zfiles")
    texts = {
        "data.json": json.dumps([{"n": i} for i in range(400)]).encode(),
        "notes.txt": b"plain text " * 400,
        "table.csv": b"a,b\n" + b"1,2\n" * 500,
    }
    for position, (name, data) in enumerate(texts.items()):
        file_id = f"z{position}"
        upload(admin, "zfiles", data, file_id=file_id, name=name)
        for path in ("download", "view"):
            response, raw = raw_get(
                admin, f"/storage/buckets/zfiles/files/{file_id}/{path}", "gzip, br, zstd"
            )
            assert response.status_code == 200, name
            assert "content-encoding" not in response.headers, (name, path)
            assert raw == data
    assert download(admin, "zfiles", "z0").content == texts["data.json"]


def test_binary_bodies_are_never_compressed(admin: httpx.Client) -> None:
    create_bucket(admin, "zbinary")
    upload(admin, "zbinary", bytes(range(256)) * 40, file_id="b1", name="data.bin")
    preview, raw = raw_get(
        admin, "/storage/buckets/zbinary/files/b1/preview", "gzip", params={"width": 300}
    )
    assert preview.status_code == 200 and preview.headers["content-type"].startswith("image/")
    assert "content-encoding" not in preview.headers and len(raw) > 1024


def test_compression_off_sends_every_answer_plain() -> None:
    with LocalService(compression=False) as plain, key_client(plain) as client:
        create_database(client, DB)
        create_table(client, DB, TABLE, [TEXT_COLUMN])
        rows = [{"$id": f"n{i}", "text": "y" * 500} for i in range(20)]
        ok(client.post(ROWS, json={"rows": rows}), 201)
        response, raw = raw_get(client, ROWS, "gzip, deflate, br, zstd")
        assert "content-encoding" not in response.headers and len(raw) > 10_000
        assert len(json.loads(raw)["rows"]) == 20
