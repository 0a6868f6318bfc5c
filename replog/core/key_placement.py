"""Which partition of an internal topic a key belongs to: where Kafka would put it.

Kafka places a group id (in `__consumer_offsets`) and a transactional id (in
`__transaction_state`) by Java's String.hashCode of the key (over UTF-16 code
units, in 32-bit arithmetic) and Utils.abs, modulo the topic's partition
count; so do we, so that a key lands on the same partition number as in Kafka.
"""


def java_string_hash(text: str) -> int:
    """Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1], as a signed 32-bit int."""
    code_units = text.encode("utf-16-be")
    value = 0
    for i in range(0, len(code_units), 2):
        value = (31 * value + ((code_units[i] << 8) | code_units[i + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def java_abs(value: int) -> int:
    """Kafka's Utils.abs: |value|, except Integer.MIN_VALUE, which has no positive twin, is 0."""
    return 0 if value == -(1 << 31) else abs(value)


def partition_for(key: str, partition_count: int) -> int:
    return java_abs(java_string_hash(key)) % partition_count
