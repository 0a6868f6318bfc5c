"""`replog dump-log`: a partition's files read back entry by entry, and what in them is unsound found."""

import json
import struct

import pytest

from replog.cli.main import main
from replog.core.group import records as group_records
from replog.core.producer_state import CachedBatch, ProducerEntry
from replog.core.topic_partition import TopicPartition
from replog.core.txn import records as txn_records
from replog.core.txn.aborted import AbortedTxn
from replog.core.txn.markers import TxnMarker
from replog.core.txn.metadata import TransactionMetadata
from replog.core.txn.state import TxnState
from replog.protocol import encode_batch
from replog.protocol.control import marker_batch
from replog.storage.dump import dump
from replog.storage.producer_snapshots import ProducerSnapshots
from tests.storage.conftest import START_MS, batch

FIRST = "00000000000000000000"


def kinds(entries, kind):
    return [entry for entry in entries if entry["kind"] == kind]


def written(open_log, batches: int = 12) -> None:
    """A partition of two segments (1 KiB each), indexed every 128 bytes, with one aborted transaction."""
    log = open_log()
    for tag in range(batches):
        log.append_as_leader(batch(3, tag=tag, timestamp_ms=START_MS + tag), 0, START_MS)
    log.index_aborted([AbortedTxn(7, 0, 3, 4)])
    log.close()


def test_a_segment_reads_back_batch_by_batch_and_record_by_record(open_log, partition_dir):
    log = open_log()
    log.append_as_leader(batch(2, tag=1), 0, START_MS)
    log.append_as_leader(encode_batch([(None, b"\xff\xfe"), (b"k", b"v")], base_timestamp_ms=START_MS + 5,
                                      producer_id=7, producer_epoch=0, base_sequence=0, transactional=True), 3,
                         START_MS)
    log.append_as_leader(marker_batch(TxnMarker(7, 0, 4, True), timestamp_ms=START_MS + 6), 3, START_MS)
    log.close()
    entries = list(dump(partition_dir / f"{FIRST}.log", payloads=True))
    assert [(b["base_offset"], b["last_offset"], b["count"], b["producer_id"], b["last_sequence"],
             b["transactional"], b["control"], b["partition_leader_epoch"]) for b in kinds(entries, "batch")] == [
        (0, 1, 2, -1, -1, False, False, 0), (2, 3, 2, 7, 1, True, False, 3), (4, 4, 1, 7, -1, True, True, 3)]
    records = kinds(entries, "record")
    assert [(r["offset"], r["sequence"], r["key"], r["value_size"]) for r in records] == [
        (0, -1, "k", 40), (1, -1, "k", 40), (2, 0, None, 2), (3, 1, "k", 1)]
    assert records[2]["value"] == "\\xff\\xfe"  # bytes that are not UTF-8, escaped
    assert kinds(entries, "marker") == [{"kind": "marker", "offset": 4, "timestamp": START_MS + 6,
                                         "marker": "COMMIT", "producer_id": 7, "coordinator_epoch": 4}]
    assert not kinds(entries, "problem")
    assert "key" not in kinds(dump(partition_dir / f"{FIRST}.log", records=True), "record")[0]


def test_indexes_agree_with_their_segments(open_log, partition_dir):
    written(open_log)
    log_entries = kinds(dump(partition_dir / f"{FIRST}.log"), "batch")
    index = list(dump(partition_dir / f"{FIRST}.index", check_index=True))
    assert len(index) >= 3 and not kinds(index, "problem")
    by_position = {b["position"]: b["last_offset"] for b in log_entries}
    assert all(by_position[entry["position"]] == entry["offset"] for entry in index)
    times = list(dump(partition_dir / f"{FIRST}.timeindex", check_index=True))
    assert len(times) >= 3 and not kinds(times, "problem")
    assert list(dump(partition_dir / f"{FIRST}.txnindex")) == [
        {"kind": "aborted", "version": 0, "producer_id": 7, "first_offset": 0, "last_offset": 3,
         "last_stable_offset": 4}]


def cut(position: int, size: int, reason: str) -> dict:
    return {"kind": "problem", "at": f"byte {position}",
            "problem": f"{reason}; the {size} bytes from here are not read (recovery cuts the segment there)"}


def test_a_corrupt_batch_and_a_torn_tail_are_problems_where_they_are(open_log, partition_dir):
    written(open_log)
    segment = partition_dir / f"{FIRST}.log"
    data = bytearray(segment.read_bytes())
    second = kinds(dump(segment), "batch")[1]["position"]
    data[second + 70] ^= 0xFF  # inside the second batch's records
    segment.write_bytes(bytes(data))
    entries = list(dump(segment))
    assert len(kinds(entries, "batch")) == 1
    [problem] = kinds(entries, "problem")
    assert problem["at"] == f"byte {second}" and problem["problem"].startswith(f"batch at byte {second} has CRC")
    assert problem["problem"].endswith(f"the {len(data) - second} bytes from here are not read (recovery cuts the "
                                       "segment there)")

    segment.write_bytes(bytes(data[:second]) + (99).to_bytes(8, "big") + (500).to_bytes(4, "big") + b"x" * 10)
    assert kinds(dump(segment), "problem") == [
        cut(second, 22, "a batch of 512 bytes starts here, but 22 bytes remain: a torn write")]

    segment.write_bytes(bytes(data[:second]) + (99).to_bytes(8, "big") + (-1).to_bytes(4, "big", signed=True) + data)
    assert kinds(dump(segment), "problem") == [
        cut(second, 12 + len(data), "a batch length of -1 is below 49, what a batch's header takes")]

    segment.write_bytes(bytes(data[:second]) + b"\x00" * 7)
    assert kinds(dump(segment), "problem") == [cut(second, 7, "the last 7 bytes are not a whole batch")]


def test_batches_that_cannot_stand_where_they_are_end_the_segment_as_recovery_ends_it(open_log, partition_dir):
    written(open_log)
    segment = partition_dir / f"{FIRST}.log"
    data = segment.read_bytes()
    batches = kinds(dump(segment), "batch")
    segment.write_bytes(data + data[:batches[0]["size"]] + data)  # the first batch again, after the last
    assert kinds(dump(segment), "batch") == batches
    assert kinds(dump(segment), "problem") == [
        cut(len(data), batches[0]["size"] + len(data),
            f"the batch starts at offset 0, below {batches[-1]['last_offset'] + 1}, the end of the batch before it")]

    later = partition_dir / "00000000000000000005.log"  # the same bytes, named after a later base offset
    later.write_bytes(data)
    assert kinds(dump(later), "problem") == [
        cut(0, len(data), "the batch starts at offset 0, below 5, the segment's base offset")]


def test_index_entries_that_point_at_no_batch_are_problems(open_log, partition_dir):
    written(open_log)
    index = partition_dir / f"{FIRST}.index"
    index.write_bytes(index.read_bytes()[:8] + (100).to_bytes(4, "big") + (3).to_bytes(4, "big"))
    problems = kinds(dump(index, check_index=True), "problem")
    assert [p["at"] for p in problems] == ["entry 1", "entry 1"]
    assert problems[0]["problem"] == "its offset is not above the previous entry's or its position is below it"
    assert problems[1]["problem"] == "no batch of the segment starts at byte 3"
    times = partition_dir / f"{FIRST}.timeindex"
    times.write_bytes((START_MS + 99).to_bytes(8, "big") + (5).to_bytes(4, "big"))
    [problem] = kinds(dump(times, check_index=True), "problem")
    assert problem["problem"] == f"the largest timestamp up to offset 5 is {START_MS + 1}, not {START_MS + 99}"
    assert not kinds(dump(times), "problem")  # unchecked, it is only listed


def test_a_producer_snapshot_lists_its_producers(partition_dir):
    partition_dir.mkdir(parents=True)
    ProducerSnapshots(partition_dir).write(12, [ProducerEntry(7, 2, (CachedBatch(0, 4, 3, 7, START_MS),), 0, 5, 3)])
    assert list(dump(partition_dir / "00000000000000000012.snapshot")) == [
        {"kind": "producer", "producer_id": 7, "producer_epoch": 2, "coordinator_epoch": 5,
         "current_txn_first_offset": 3,
         "batches": [{"first_sequence": 0, "last_sequence": 4, "first_offset": 3, "last_offset": 7,
                      "max_timestamp": START_MS}]}]


def test_the_internal_topics_records_read_as_what_they_say(open_log, partition_dir):
    commit = group_records.offset_commit("g", "orders", 2, group_records.OffsetCommitValue(42, 3, "", START_MS))
    member = group_records.current_member_assignment("g", "m-1", None)  # a tombstone
    state = TransactionMetadata("t-1", 9, 1, 60_000, TxnState.ONGOING, START_MS,
                                frozenset({TopicPartition("orders", 1), TopicPartition("orders", 0)}), START_MS)
    log = open_log()
    log.append_as_leader(encode_batch([commit.encode(), member.encode()], base_timestamp_ms=START_MS), 0, START_MS)
    log.append_as_leader(encode_batch([txn_records.TxnRecord("t-1", state).encode()], base_timestamp_ms=START_MS),
                         0, START_MS)
    log.close()
    segment = partition_dir / f"{FIRST}.log"
    decoded = [entry.get("decoded") for entry in dump(segment, decoder="offsets") if entry["kind"] == "record"]
    assert decoded[:2] == [
        {"type": "OFFSET_COMMIT", "group_id": "g", "member_id": "", "topic": "orders", "partition": 2,
         "value": {"offset": 42, "leader_epoch": 3, "metadata": "", "commit_timestamp_ms": START_MS}},
        {"type": "CURRENT_MEMBER_ASSIGNMENT", "group_id": "g", "member_id": "m-1", "topic": "", "partition": -1,
         "value": None}]
    [problem] = kinds(dump(segment, decoder="offsets"), "problem")  # the transaction's record is no group's
    assert problem["at"] == "offset 2" and problem["problem"].startswith("not a record of __consumer_offsets: ")
    transaction = [entry for entry in dump(segment, decoder="transaction-log") if entry["kind"] == "record"][2]
    assert transaction["decoded"]["metadata"]["state"] == "ONGOING"
    assert transaction["decoded"]["metadata"]["partitions"] == ["orders-0", "orders-1"]


def test_sequences_wrap_as_a_producer_numbers_them(open_log, partition_dir):
    log = open_log()
    log.append_as_leader(encode_batch([(b"k", b"v")] * 3, base_timestamp_ms=START_MS, producer_id=5,
                                      producer_epoch=0, base_sequence=2**31 - 2), 0, START_MS)
    log.close()
    entries = list(dump(partition_dir / f"{FIRST}.log", records=True))
    assert kinds(entries, "batch")[0]["last_sequence"] == 0
    assert [record["sequence"] for record in kinds(entries, "record")] == [2**31 - 2, 2**31 - 1, 0]


TXN_ENTRY = struct.Struct(">hqqqq")


@pytest.mark.parametrize(("name", "content", "says"), [
    ("00000000000000000000.snapshot", b"{not json", "not a producer snapshot: Expecting property name"),
    ("00000000000000000000.snapshot", b'{"version":2,"offset":0,"producers":5}',
     "not a producer snapshot: its producers are not a snapshot's list of producers"),
    ("00000000000000000000.snapshot", b'{"version":2,"offset":0,"producers":[1]}',
     "not a producer snapshot: its producers are not a snapshot's list of producers"),
    ("00000000000000000000.snapshot", b'{"version":99,"offset":0,"producers":[]}',
     "not a producer snapshot: its version is 99; this build reads (1, 2, 3)"),
    ("00000000000000000007.snapshot", b'{"version":2,"offset":0,"producers":[]}',
     "it says it holds the producers at offset 0, its name 7"),
    ("00000000000000000000.index", b"\x00" * 9, "the last 1 bytes are not a whole 8-byte entry"),
    ("00000000000000000000.timeindex", b"\x00" * 12 * 2, "its timestamp is not above the previous entry's"),
    ("00000000000000000000.txnindex", TXN_ENTRY.pack(5, 7, 0, 9, 10), "the entry has version 5; this build reads 0"),
    ("00000000000000000000.txnindex", TXN_ENTRY.pack(0, 7, 0, 9, 10) + TXN_ENTRY.pack(0, 8, 0, 3, 10),
     "the entry ends at 3, not after the entry before (9)"),
])
def test_each_unsound_file_is_a_problem_and_exit_1_never_a_traceback(tmp_path, capsys, name, content, says):
    (tmp_path / name).write_bytes(content)
    code, out, err = run(capsys, "dump-log", str(tmp_path / name))
    assert code == 1 and err == "replog: 1 problem found\n", err
    assert "PROBLEM at " in out and says in out, out


def test_an_index_without_its_segment_is_listed_and_said_unchecked(tmp_path):
    index = tmp_path / f"{FIRST}.index"
    index.write_bytes(struct.pack(">ii", 5, 100))
    assert list(dump(index, check_index=True)) == [
        {"kind": "index", "offset": 5, "position": 100},
        {"kind": "problem", "at": index.name, "problem": f"no {FIRST}.log beside it to check it against"}]


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_command_reads_a_whole_partition_directory_and_exits_1_on_a_problem(open_log, partition_dir, capsys):
    written(open_log)
    code, out, err = run(capsys, "dump-log", str(partition_dir), "--index-sanity-check", "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and err == ""
    files = list(dict.fromkeys(line["file"].rsplit("/", 1)[1] for line in lines))
    bases = sorted({path.stem for path in partition_dir.glob("*.log")})
    assert len(bases) >= 2
    assert files == [f"{base}{suffix}" for base in bases for suffix in (".log", ".index", ".timeindex", ".txnindex")
                     if (partition_dir / f"{base}{suffix}").exists()]
    assert files[:4] == [f"{FIRST}.log", f"{FIRST}.index", f"{FIRST}.timeindex", f"{FIRST}.txnindex"]
    assert [line["base_offset"] for line in lines if line["kind"] == "batch"] == list(range(0, 36, 3))

    segment = partition_dir / f"{FIRST}.log"
    segment.write_bytes(segment.read_bytes() + b"\x00" * 5)
    code, out, err = run(capsys, "dump-log", "--files", f"{segment},{partition_dir / f'{FIRST}.index'}")
    assert code == 1 and err == "replog: 1 problem found\n"
    assert "PROBLEM at byte" in out and "the last 5 bytes are not a whole batch" in out


def test_text_output_keeps_each_value_on_its_line(open_log, partition_dir, capsys):
    log = open_log()
    log.append_as_leader(encode_batch([(None, b"a\nPROBLEM at byte 0: not one")], base_timestamp_ms=START_MS), 0,
                         START_MS)
    log.close()
    code, out, _ = run(capsys, "dump-log", str(partition_dir / f"{FIRST}.log"), "--print-data-log")
    assert code == 0 and out.count("PROBLEM") == 1 and len(out.splitlines()) == 3
    assert "key: null" in out and "value: a\\nPROBLEM at byte 0: not one" in out


def test_a_directory_in_a_partition_directory_is_passed_over(open_log, partition_dir, capsys):
    written(open_log)
    (partition_dir / "00000000000000099999.log").mkdir()
    code, out, _ = run(capsys, "dump-log", str(partition_dir))
    assert code == 0 and "99999" not in out


@pytest.mark.parametrize(("argv", "says"), [
    ([], "name the files to read"),
    (["{dir}/notes.txt"], "is not a file of a partition's log: its name should be a 20-digit offset"),
    (["{dir}/00000000000000000000.log"], "00000000000000000000.log does not exist"),
    (["{dir}"], "holds no partition files"),
])
def test_a_path_it_cannot_read_is_one_sentence(tmp_path, capsys, argv, says):
    code, out, err = run(capsys, "dump-log", *(arg.format(dir=tmp_path) for arg in argv))
    assert code == 1 and out == "" and says in err and "Traceback" not in err, err
