"""LZ4 in the frame format, written the way Kafka's Java client writes it.

Kafka's Lz4BlockOutputStream writes frame version 1 with independent 64 KiB
blocks and no block or content checksums (the batch CRC covers the bytes), and
its reader refuses linked blocks, which is what cramjam's own frame writer
produces by default. So the frame is assembled here from raw LZ4 blocks; any
well-formed frame, including those with checksums, is read through cramjam.
"""

import struct

import cramjam

MAGIC = struct.pack("<I", 0x184D2204)
FLG = 0x60  # version 01, block independence; no checksums, no content size
BD = 0x40  # block maximum size 64 KiB
# Second byte of xxHash32(FLG, BD); a fixed value because FLG and BD are fixed.
HEADER_CHECKSUM = 0x82
HEADER = MAGIC + bytes((FLG, BD, HEADER_CHECKSUM))
BLOCK_INPUT_BYTES = 64 * 1024
UNCOMPRESSED_BIT = 0x80000000  # set in a block's size: the block is stored as is
END_MARK = struct.pack("<I", 0)
_BLOCK_SIZE = struct.Struct("<I")


def compress(data: bytes) -> bytes:
    """Frame `data` with LZ4's fast compressor, the one Kafka's default level selects."""
    parts = [HEADER]
    for start in range(0, len(data), BLOCK_INPUT_BYTES):
        chunk = data[start : start + BLOCK_INPUT_BYTES]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):
            parts.append(_BLOCK_SIZE.pack(len(chunk) | UNCOMPRESSED_BIT))
            parts.append(chunk)
        else:
            parts.append(_BLOCK_SIZE.pack(len(block)))
            parts.append(block)
    parts.append(END_MARK)
    return b"".join(parts)


def decompress(data) -> bytes:
    return bytes(cramjam.lz4.decompress(data))
