"""An in-process cluster that speaks the v1 protos, for testing the client's logic.

Brokers, a metadata service and a controller on real gRPC servers (localhost
ports), backed by one shared in-memory model: partitions with a leader, a
leader epoch, an epoch cache and a log of stamped batches. Tests move leaders,
truncate logs and inject per-partition errors to drive the client through
failures; the broker rules here are the protos' (leader checks, epoch checks,
reading below the HW), kept minimal.
"""

from __future__ import annotations

import threading
import time
from concurrent import futures
from dataclasses import dataclass, field

import grpc

from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
from replog.api.common.v1 import common_pb2
from replog.api.controller.v1 import controller_pb2, controller_pb2_grpc
from replog.api.metadata.v1 import metadata_pb2, metadata_pb2_grpc
from replog.core.errors import ErrorCode
from replog.protocol import read_header, stamp_batches, validate_batches

MAX_MESSAGE_BYTES = 8 << 20


@dataclass
class FakePartition:
    leader: int
    replicas: list[int]
    leader_epoch: int = 0
    log: list[tuple[int, bytes]] = field(default_factory=list)  # (base offset, stamped batch)
    epochs: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])  # (epoch, start offset)
    injected: list[int] = field(default_factory=list)  # error codes to answer the next produces with

    @property
    def log_end_offset(self) -> int:
        if not self.log:
            return 0
        base, batch = self.log[-1]
        return read_header(batch).next_offset

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        """(largest epoch <= `epoch`, its end offset), as OffsetsForLeaderEpoch answers."""
        found = [(e, start) for e, start in self.epochs if e <= epoch]
        if not found:
            return -1, -1
        chosen, _start = found[-1]
        later = [start for e, start in self.epochs if e > chosen]
        return chosen, later[0] if later else self.log_end_offset


class FakeState:
    def __init__(self, broker_ids: list[int]) -> None:
        self.lock = threading.Condition()
        self.broker_ids = broker_ids
        self.addresses: dict[int, str] = {}
        self.live: set[int] = set(broker_ids)
        self.topics: dict[str, list[FakePartition]] = {}
        self.produce_requests: list[broker_pb2.ProduceRequest] = []
        self.fetch_requests: list[broker_pb2.FetchRequest] = []
        self.validations: list[broker_pb2.OffsetsForLeaderEpochRequest] = []
        self.produce_gate = threading.Event()  # clear it to make Produce hang until it is set again
        self.produce_gate.set()

    def create(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        with self.lock:
            ids = self.broker_ids
            self.topics[name] = [
                FakePartition(leader=ids[p % len(ids)],
                              replicas=[ids[(p + r) % len(ids)] for r in range(replication_factor)])
                for p in range(partitions)
            ]

    def elect(self, topic: str, partition: int, leader: int, truncate_to: int | None = None) -> None:
        """A new leader at the next epoch; with truncate_to, its log is cut there first (unclean)."""
        with self.lock:
            part = self.topics[topic][partition]
            if truncate_to is not None:
                part.log = [(b, batch) for b, batch in part.log if read_header(batch).next_offset <= truncate_to]
                part.epochs = [(e, s) for e, s in part.epochs if s < part.log_end_offset or s == 0]
            part.leader = leader
            part.leader_epoch += 1
            part.epochs.append((part.leader_epoch, part.log_end_offset))
            self.lock.notify_all()

    def inject(self, topic: str, partition: int, *codes: ErrorCode) -> None:
        with self.lock:
            self.topics[topic][partition].injected.extend(int(c) for c in codes)

    def records(self, topic: str, partition: int) -> list[bytes]:
        with self.lock:
            return [batch for _base, batch in self.topics[topic][partition].log]


class FakeMetadata(metadata_pb2_grpc.MetadataServiceServicer):
    def __init__(self, state: FakeState, controller_address: str) -> None:
        self.state = state
        self.controller_address = controller_address

    def Metadata(self, request, context):
        state = self.state
        host, port = self.controller_address.rsplit(":", 1)
        with state.lock:
            response = metadata_pb2.MetadataResponse(
                cluster_id="fake", controller_id=1, image_version=1,
                controller=common_pb2.ControllerEndpoint(controller_id=1, host=host, port=int(port)),
            )
            for broker_id in sorted(state.live):
                b_host, b_port = state.addresses[broker_id].rsplit(":", 1)
                response.brokers.add(broker_id=broker_id, host=b_host, port=int(b_port))
            for name in request.topics or sorted(state.topics):
                if name not in state.topics:
                    response.topics.add(name=name, error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                                        error_message=f"topic {name!r} does not exist")
                    continue
                topic = response.topics.add(name=name, error_code=int(ErrorCode.NONE), topic_id=f"id-{name}")
                for index, part in enumerate(state.topics[name]):
                    topic.partitions.add(error_code=int(ErrorCode.NONE), partition=index, leader=part.leader,
                                         leader_epoch=part.leader_epoch, replicas=part.replicas, isr=part.replicas)
        return response


class FakeController(controller_pb2_grpc.ControllerServiceServicer):
    def __init__(self, state: FakeState) -> None:
        self.state = state
        self.not_controller_answers = 0  # answer NOT_CONTROLLER this many times first

    def CreateTopics(self, request, context):
        response = controller_pb2.CreateTopicsResponse()
        for topic in request.topics:
            if self.not_controller_answers:
                self.not_controller_answers -= 1
                response.topics.add(name=topic.name, error_code=int(ErrorCode.NOT_CONTROLLER))
                continue
            if topic.name in self.state.topics:
                response.topics.add(name=topic.name, error_code=int(ErrorCode.TOPIC_ALREADY_EXISTS),
                                    error_message=f"topic {topic.name!r} already exists")
                continue
            count = topic.num_partitions if topic.num_partitions > 0 else len(topic.assignments)
            rf = topic.replication_factor if topic.replication_factor > 0 else 1
            if not request.validate_only:
                self.state.create(topic.name, count, rf)
            response.topics.add(name=topic.name, topic_id=f"id-{topic.name}", error_code=int(ErrorCode.NONE),
                                num_partitions=count, replication_factor=rf)
        return response


class FakeBroker(broker_pb2_grpc.BrokerServiceServicer):
    def __init__(self, state: FakeState, broker_id: int) -> None:
        self.state = state
        self.broker_id = broker_id

    def _check(self, topic: str, partition: int, epoch: int) -> tuple[ErrorCode, FakePartition | None]:
        parts = self.state.topics.get(topic)
        if parts is None or not 0 <= partition < len(parts):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        part = parts[partition]
        if part.leader != self.broker_id:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, part
        if epoch >= 0 and epoch < part.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH, part
        if epoch > part.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH, part
        return ErrorCode.NONE, part

    def Produce(self, request, context):
        state = self.state
        state.produce_gate.wait()
        response = broker_pb2.ProduceResponse()
        with state.lock:
            state.produce_requests.append(request)
            for topic in request.topics:
                out = response.topics.add(topic=topic.topic)
                for data in topic.partitions:
                    code, part = self._check(topic.topic, data.partition, data.current_leader_epoch)
                    result = out.partitions.add(partition=data.partition, base_offset=-1, log_append_time_ms=-1)
                    if code is ErrorCode.NONE and part.injected:
                        code = ErrorCode(part.injected.pop(0))
                    if code is ErrorCode.NONE:
                        checked = validate_batches(data.records, max_message_bytes=MAX_MESSAGE_BYTES)
                        code = checked.error
                    if code is not ErrorCode.NONE:
                        result.error_code = int(code)
                        result.error_message = f"fake broker {self.broker_id}: {code.name}"
                        if part is not None and code is ErrorCode.NOT_LEADER_OR_FOLLOWER:
                            result.current_leader.leader_id = part.leader
                            result.current_leader.leader_epoch = part.leader_epoch
                        continue
                    buffer = bytearray(data.records)
                    first = base = part.log_end_offset
                    stamp_batches(buffer, base, part.leader_epoch, checked.headers)
                    for header in checked.headers:
                        part.log.append((base, bytes(buffer[header.position:header.end])))
                        base += header.last_offset_delta + 1
                    result.error_code = int(ErrorCode.NONE)
                    result.base_offset = -1 if request.acks == 0 else first
            state.lock.notify_all()
        return response

    def Fetch(self, request, context):
        state = self.state
        deadline = time.monotonic() + request.max_wait_ms / 1000
        with state.lock:
            state.fetch_requests.append(request)
            while True:
                response = self._read(request)
                has_data = any(p.records or p.error_code != int(ErrorCode.NONE)
                               for t in response.topics for p in t.partitions)
                remaining = deadline - time.monotonic()
                if has_data or remaining <= 0:
                    return response
                state.lock.wait(remaining)

    def _read(self, request) -> broker_pb2.FetchResponse:
        response = broker_pb2.FetchResponse(error_code=int(ErrorCode.NONE))
        for topic in request.topics:
            out = response.topics.add(topic=topic.topic)
            for wanted in topic.partitions:
                code, part = self._check(topic.topic, wanted.partition, wanted.current_leader_epoch)
                result = out.partitions.add(partition=wanted.partition, error_code=int(code))
                if code is not ErrorCode.NONE:
                    if part is not None:
                        result.current_leader.leader_id = part.leader
                        result.current_leader.leader_epoch = part.leader_epoch
                    continue
                high_watermark = part.log_end_offset
                result.high_watermark = high_watermark
                if wanted.fetch_offset > high_watermark:
                    result.error_code = int(ErrorCode.OFFSET_OUT_OF_RANGE)
                    continue
                chunks, size = [], 0
                for _base, batch in part.log:
                    if read_header(batch).next_offset <= wanted.fetch_offset:
                        continue
                    if chunks and size + len(batch) > wanted.partition_max_bytes:
                        break
                    chunks.append(batch)
                    size += len(batch)
                result.records = b"".join(chunks)
        return response

    def ListOffsets(self, request, context):
        response = broker_pb2.ListOffsetsResponse()
        with self.state.lock:
            for topic in request.topics:
                out = response.topics.add(topic=topic.topic)
                for wanted in topic.partitions:
                    code, part = self._check(topic.topic, wanted.partition, wanted.current_leader_epoch)
                    result = out.partitions.add(partition=wanted.partition, error_code=int(code), offset=-1,
                                                leader_epoch=-1, timestamp_ms=-1)
                    if code is ErrorCode.NONE:
                        result.offset = 0 if wanted.timestamp_ms == -2 else part.log_end_offset
                        result.leader_epoch = part.leader_epoch
        return response

    def OffsetsForLeaderEpoch(self, request, context):
        response = broker_pb2.OffsetsForLeaderEpochResponse()
        with self.state.lock:
            self.state.validations.append(request)
            for topic in request.topics:
                out = response.topics.add(topic=topic.topic)
                for wanted in topic.partitions:
                    code, part = self._check(topic.topic, wanted.partition, wanted.current_leader_epoch)
                    result = out.partitions.add(partition=wanted.partition, error_code=int(code),
                                                leader_epoch=-1, end_offset=-1)
                    if code is ErrorCode.NONE:
                        result.leader_epoch, result.end_offset = part.end_offset_for(wanted.leader_epoch)
        return response


class FakeCluster:
    """Start with `FakeCluster(brokers=3)`; `bootstrap` is the metadata service's address."""

    def __init__(self, brokers: int = 3) -> None:
        self.state = FakeState(list(range(1, brokers + 1)))
        self._servers: list[grpc.Server] = []
        for broker_id in self.state.broker_ids:
            server, address = self._serve(lambda s, b=broker_id: broker_pb2_grpc.add_BrokerServiceServicer_to_server(
                FakeBroker(self.state, b), s))
            self.state.addresses[broker_id] = address
        self.controller = FakeController(self.state)
        _server, self.controller_address = self._serve(
            lambda s: controller_pb2_grpc.add_ControllerServiceServicer_to_server(self.controller, s))
        _server, self.bootstrap = self._serve(
            lambda s: metadata_pb2_grpc.add_MetadataServiceServicer_to_server(
                FakeMetadata(self.state, self.controller_address), s))

    def _serve(self, add) -> tuple[grpc.Server, str]:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8),
                             options=[("grpc.max_receive_message_length", 64 << 20),
                                      ("grpc.max_send_message_length", 64 << 20)])
        add(server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self._servers.append(server)
        return server, f"127.0.0.1:{port}"

    def stop(self) -> None:
        for server in self._servers:
            server.stop(0)
