"""The committed replog.api modules are exactly what `make proto` generates."""

import importlib
import importlib.metadata
from pathlib import Path

import pytest
from google.protobuf import descriptor_pool

from replog.api import generate
from replog.core.errors import ErrorCode

SERVICES = {
    "broker": "BrokerService",
    "controller": "ControllerService",
    "metadata": "MetadataService",
    "coordinator": "CoordinatorService",
}


def test_committed_generated_code_matches_the_protos(tmp_path: Path) -> None:
    fresh = generate.generate(tmp_path)
    committed = generate.generated_files(generate.REPO_ROOT)
    missing = sorted(str(path) for path in fresh - committed)
    extra = sorted(str(path) for path in committed - fresh)
    differing = sorted(
        str(path)
        for path in fresh & committed
        if (tmp_path / path).read_bytes() != (generate.REPO_ROOT / path).read_bytes()
    )
    problems = [f"missing: {path}" for path in missing]
    problems += [f"not generated from any .proto: {path}" for path in extra]
    problems += [f"differs from the protos: {path}" for path in differing]
    tools = importlib.metadata.version("grpcio-tools")
    assert not problems, (
        f"replog/api is stale, run `make proto` (this checkout has grpcio-tools {tools}; "
        "the committed code must come from the version the project pins):\n  " + "\n  ".join(problems)
    )


@pytest.mark.parametrize("package", sorted(SERVICES))
def test_each_service_has_a_stub_and_a_servicer(package: str) -> None:
    service = SERVICES[package]
    grpc_module = importlib.import_module(f"replog.api.{package}.v1.{package}_pb2_grpc")
    assert callable(getattr(grpc_module, f"{service}Stub"))
    assert callable(getattr(grpc_module, f"{service}Servicer"))
    assert callable(getattr(grpc_module, f"add_{service}Servicer_to_server"))
    full_name = f"replog.api.{package}.v1.{service}"
    assert descriptor_pool.Default().FindServiceByName(full_name).methods


def test_proto_error_codes_mirror_the_core_error_codes() -> None:
    from replog.api.common.v1 import common_pb2

    proto_codes = {name: number for name, number in common_pb2.ErrorCode.items()}
    expected = {"ERROR_CODE_UNSPECIFIED": 0} | {f"ERROR_CODE_{code.name}": code.value for code in ErrorCode}
    assert proto_codes == expected
