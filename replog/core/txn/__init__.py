"""Transactions: the transaction coordinator's core and the pieces partition leaders share with it.

    state.py          TxnState and the table of the transitions it may make
    metadata.py       TransactionMetadata: one transactional id's producer, epochs and transaction
    records.py        the records of __transaction_state (key: transactional id; value: the metadata)
    coordinator.py    TransactionCoordinator: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
                      EndTxn, timeouts, markers, expiry and loading, as functions of records and time
    requests.py       what the coordinator is asked and answers, and what it asks its driver to do
    placement.py      which __transaction_state partition holds a transactional id
    markers.py        COMMIT and ABORT markers as the partitions see them
    aborted.py        aborted transactions as partitions index them, and which a fetch must name
    read_committed.py which records a read_committed consumer is given
"""
