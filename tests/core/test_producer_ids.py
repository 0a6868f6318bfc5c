"""Blocks of producer ids: each follows the last one written, and a block's ids go out one by one."""

import pytest

from replog.core.producer_ids import (
    BLOCK_SIZE,
    PRODUCER_ID_MAX,
    ProducerIdBlock,
    ProducerIdBlockError,
    ProducerIds,
    next_block,
)


def test_the_first_block_starts_at_zero_and_each_next_one_where_the_last_ended():
    first = next_block(None, broker_id=1)
    assert (first.first, first.last) == (0, BLOCK_SIZE - 1)
    second = next_block(first, broker_id=2)
    assert (second.broker_id, second.first, second.last) == (2, BLOCK_SIZE, 2 * BLOCK_SIZE - 1)


def test_a_block_reads_back_as_written_in_kafkas_json():
    block = ProducerIdBlock(3, 5000, 5999)
    assert ProducerIdBlock.decode(block.encode()) == block
    assert ProducerIdBlock.decode(b'{"version":1,"broker":3,"block_start":"5000","block_end":"5999"}') == block


@pytest.mark.parametrize("data", [b"", b"{", b'{"version":1}', b'{"broker":1,"block_start":"9","block_end":"3"}',
                                  b'{"broker":1,"block_start":"x","block_end":"3"}'])
def test_a_znode_that_holds_no_block_is_a_clear_error(data):
    with pytest.raises(ProducerIdBlockError, match="latest_producer_id_block"):
        ProducerIdBlock.decode(data)


def test_ids_run_out_only_at_the_top_of_the_range():
    with pytest.raises(ProducerIdBlockError, match="used up"):
        next_block(ProducerIdBlock(1, PRODUCER_ID_MAX - BLOCK_SIZE + 1, PRODUCER_ID_MAX), broker_id=1)


def test_a_broker_hands_out_its_blocks_ids_once_each_then_asks_for_another():
    ids = ProducerIds()
    assert ids.take() is None, "no block yet"
    ids.refill(ProducerIdBlock(1, 10, 12))
    assert [ids.take(), ids.take(), ids.take(), ids.take()] == [10, 11, 12, None]
