"""Our segment files, read by an independent parser written from Kafka's specification."""

import struct

from replog.protocol import Compression, encode_batch

from tests.protocol.spec_reader import parse_batch

from .conftest import START_MS, small_config


def test_segment_files_parse_as_kafka_record_batches(open_log, partition_dir):
    log = open_log(small_config(segment_bytes=700))
    for number in range(12):
        codec = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD][number % 5]
        values = [(b"key-%d" % number, b"value-%d-%d" % (number, i)) for i in range(3)]
        encoded = encode_batch(values, base_timestamp_ms=START_MS, compression=codec)
        log.append_as_leader(encoded, leader_epoch=4 + number // 6, now_ms=START_MS)
    log.flush()

    parsed = []
    for path in sorted(partition_dir.glob("*.log")):
        data = path.read_bytes()
        position = 0
        while position < len(data):
            (batch_length,) = struct.unpack_from(">i", data, position + 8)
            parsed.append(parse_batch(data[position : position + 12 + batch_length]))
            position += 12 + batch_length

    assert len(list(partition_dir.glob("*.log"))) > 1
    assert all(b.crc_ok and b.magic == 2 for b in parsed)
    assert [b.base_offset for b in parsed] == list(range(0, 36, 3))
    assert [b.partition_leader_epoch for b in parsed] == [4] * 6 + [5] * 6
    assert [b.records[2].value for b in parsed] == [b"value-%d-2" % n for n in range(12)]
    assert [r.offset_delta for b in parsed for r in b.records] == [0, 1, 2] * 12
