"""Read a broker's partition files directly, to compare replicas byte for byte."""

from __future__ import annotations

import os

from replog.protocol.batch import read_header
from replog.protocol.layout import HEADER_SIZE


def log_bytes_below(partition_dir: str, high_watermark: int) -> bytes:
    """The bytes of every whole batch whose records all lie below the high watermark."""
    pieces = []
    for name in sorted(n for n in os.listdir(partition_dir) if n.endswith(".log")):
        with open(os.path.join(partition_dir, name), "rb") as handle:
            data = handle.read()
        position = 0
        while position + HEADER_SIZE <= len(data):
            header = read_header(data, position)
            if header.last_offset >= high_watermark or position + header.size > len(data):
                return b"".join(pieces)
            pieces.append(data[position:position + header.size])
            position += header.size
    return b"".join(pieces)
