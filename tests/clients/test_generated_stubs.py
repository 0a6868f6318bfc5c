"""`make clients` from a team's point of view: buf.gen.yaml generates TypeScript for every service
with protoc-gen-es from npm, the code type-checks under tsc --strict, and the descriptor set that
`buf build` writes describes every service, comments included."""

from __future__ import annotations

import os
import subprocess

import pytest
from google.protobuf import descriptor_pb2

from tests.clients.node import CLIENT_DIR, REPO_ROOT, node_binary
from tests.unit.test_buf_lint import buf_or_skip

pytestmark = pytest.mark.timeout(120)

SERVICES = {
    "replog/api/broker/v1/broker_pb.ts": "BrokerService",
    "replog/api/controller/v1/controller_pb.ts": "ControllerService",
    "replog/api/coordinator/v1/coordinator_pb.ts": "CoordinatorService",
    "replog/api/metadata/v1/metadata_pb.ts": "MetadataService",
    "replog/api/common/v1/common_pb.ts": "ErrorCode",
}


def test_buf_generate_writes_typescript_for_every_service_and_it_type_checks(tmp_path) -> None:
    node_binary()
    result = subprocess.run([buf_or_skip(), "generate", "-o", str(tmp_path)], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "build" / "clients" / "ts"
    for path, name in SERVICES.items():
        assert f"export const {name}" in (out / path).read_text(), f"{path} lacks {name}"
    os.symlink(CLIENT_DIR / "node_modules", tmp_path / "node_modules")  # where tsc finds @bufbuild/protobuf
    tsc = subprocess.run([str(CLIENT_DIR / "node_modules" / ".bin" / "tsc"), "--noEmit", "--strict", "--target",
                          "es2022", "--module", "es2022", "--moduleResolution", "bundler", "--skipLibCheck",
                          *(str(out / path) for path in SERVICES)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=90)
    assert tsc.returncode == 0, tsc.stdout + tsc.stderr


def test_the_descriptor_set_describes_every_service_with_its_comments(tmp_path) -> None:
    image = tmp_path / "replog-api.binpb"
    result = subprocess.run([buf_or_skip(), "build", "proto", "-o", str(image)], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    files = descriptor_pb2.FileDescriptorSet.FromString(image.read_bytes()).file
    services = {s.name for f in files for s in f.service}
    assert services == {"BrokerService", "ControllerService", "CoordinatorService", "MetadataService"}
    assert all(f.source_code_info.location for f in files), "comments travel with the descriptors"
