"""Decompression of Kafka record payloads: gzip, snappy, lz4 and zstd (codec ids 1-4).

Owns the codec ids and the framing quirks of what real producers write:
- snappy: raw blocks (librdkafka) or xerial-framed (the Java client's
  snappy-java stream: a 16-byte header then length-prefixed raw blocks); the
  official snappy framing format is accepted too;
- lz4: the LZ4 frame format; message format v0 written by old Java clients
  carries a wrong frame-descriptor checksum (KAFKA-3160), so the checksum byte
  is recomputed before decoding (the batch CRC already guards the payload);
- zstd: zstd frames (message format v2 only).
The broker never compresses: batches are stored as received.
"""
from __future__ import annotations

import struct
import zlib
from enum import IntEnum

import cramjam


class Codec(IntEnum):
    """Compression codec ids, as in the low three attribute bits of a batch or message."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class DecompressionError(ValueError):
    """A compressed payload that cannot be decoded (unknown codec or damaged data)."""


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16  # magic (8) + version (4) + compatible version (4)
_SNAPPY_FRAMED_MAGIC = b"\xff\x06\x00\x00sNaPpY"
_LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"


def decompress(codec: int, payload: bytes | memoryview) -> bytes:
    """The uncompressed bytes of `payload` compressed with `codec`."""
    try:
        if codec == Codec.NONE:
            return bytes(payload)
        if codec == Codec.GZIP:
            return _gzip(bytes(payload))
        if codec == Codec.SNAPPY:
            return _snappy(bytes(payload))
        if codec == Codec.LZ4:
            return _lz4_frame(bytes(payload))
        if codec == Codec.ZSTD:
            return bytes(cramjam.zstd.decompress(bytes(payload)))
    except DecompressionError:
        raise
    except Exception as exc:  # the codecs raise assorted types; name the codec
        name = Codec(codec).name.lower()
        raise DecompressionError(f"{name} payload of {len(payload)} bytes does not decode: {exc}") from exc
    raise DecompressionError(f"unknown compression codec id {codec} (known: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)")


def _gzip(data: bytes) -> bytes:
    # Every member of a multi-member stream, as Java's GZIPInputStream reads them.
    parts = []
    while data:
        member = zlib.decompressobj(47)  # 47: a gzip or zlib header
        parts.append(member.decompress(data))
        if not member.eof:
            raise DecompressionError("gzip payload ends inside a compressed member")
        data = member.unused_data
    return b"".join(parts)


def _snappy(data: bytes) -> bytes:
    if data.startswith(_XERIAL_MAGIC):
        return _snappy_xerial(data)
    if data.startswith(_SNAPPY_FRAMED_MAGIC):
        return bytes(cramjam.snappy.decompress(data))
    return bytes(cramjam.snappy.decompress_raw(data))


def _snappy_xerial(data: bytes) -> bytes:
    out = bytearray()
    pos = _XERIAL_HEADER_SIZE
    while pos < len(data):
        if pos + 4 > len(data):
            raise DecompressionError(f"xerial snappy stream cut inside a block length at byte {pos}")
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise DecompressionError(f"xerial snappy block of {size} bytes at byte {pos} runs past the payload end")
        out += cramjam.snappy.decompress_raw(data[pos : pos + size])
        pos += size
    return bytes(out)


def _lz4_frame(data: bytes) -> bytes:
    if not data.startswith(_LZ4_FRAME_MAGIC) or len(data) < 7:
        raise DecompressionError("lz4 payload is not an LZ4 frame (magic 04 22 4d 18 expected)")
    flags = data[4]
    descriptor_end = 6 + (8 if flags & 0x08 else 0) + (4 if flags & 0x01 else 0)
    if len(data) <= descriptor_end:
        raise DecompressionError("lz4 frame cut inside its descriptor")
    checksum = (xxh32(data[4:descriptor_end]) >> 8) & 0xFF
    if data[descriptor_end] != checksum:
        data = data[:descriptor_end] + bytes([checksum]) + data[descriptor_end + 1 :]
    return bytes(cramjam.lz4.decompress(data))


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of `data` (used for LZ4 frame descriptors: a few bytes, so speed is no concern)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for lane in range(4):
                (word,) = struct.unpack_from("<I", data, pos)
                v[lane] = (_rotl((v[lane] + word * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (word,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
