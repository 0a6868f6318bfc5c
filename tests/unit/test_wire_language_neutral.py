"""Nothing on the wire assumes a Python client (DESIGN §1, §4): every bytes field says which
language-neutral encoding it holds and docs/API.md documents it, no field is an opaque typed blob
(Any, Struct) or pickled data, every enum starts with its UNSPECIFIED zero, and proto3 throughout."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2
from grpc_tools import protoc

from replog.api.generate import PROTO_ROOT, REPO_ROOT, proto_files

# The encodings a bytes field may hold, each with the heading of docs/API.md that lays it out.
ENCODINGS = {"RecordBatch v2": "## How records travel"}
OPAQUE_TYPES = {".google.protobuf.Any", ".google.protobuf.Struct", ".google.protobuf.Value"}
PYTHON_ONLY = re.compile(r"pickle|marshal|shelve|cPickle")
BYTES = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
API_DOC = (REPO_ROOT / "docs" / "API.md").read_text()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> list[descriptor_pb2.FileDescriptorProto]:
    out = tmp_path_factory.mktemp("descriptors") / "api.binpb"
    well_known = resources.files("grpc_tools") / "_proto"
    args = ["protoc", f"-I{PROTO_ROOT}", f"-I{well_known}", "--include_source_info", f"--descriptor_set_out={out}",
            *(str(p) for p in proto_files())]
    assert protoc.main(args) == 0
    return list(descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file)


def comments(file: descriptor_pb2.FileDescriptorProto) -> dict[tuple[int, ...], str]:
    return {tuple(loc.path): loc.leading_comments for loc in file.source_code_info.location}


def messages(file: descriptor_pb2.FileDescriptorProto):
    """(full name, message, its source path) for every message, nested ones included."""
    def walk(prefix, message_list, path):
        for index, message in enumerate(message_list):
            name, here = f"{prefix}.{message.name}", (*path, index)
            yield name, message, here
            yield from walk(name, message.nested_type, (*here, 3))
    yield from walk(file.package, file.message_type, (4,))


def test_every_bytes_field_names_its_encoding_and_the_api_guide_lays_it_out(files) -> None:
    bytes_fields = []
    for file in files:
        said = comments(file)
        for name, message, path in messages(file):
            for index, field in enumerate(message.field):
                if field.type != BYTES:
                    continue
                comment = said.get((*path, 2, index), "")
                encodings = [e for e in ENCODINGS if e in comment]
                assert encodings, f"{name}.{field.name} is bytes but its comment names none of {sorted(ENCODINGS)}"
                assert f"{message.name}.{field.name}" in API_DOC, f"docs/API.md never mentions {name}.{field.name}"
                bytes_fields.append(f"{name}.{field.name}")
    assert bytes_fields, "the records travel as bytes"
    for heading in ENCODINGS.values():
        assert heading in API_DOC


def test_no_field_is_an_opaque_typed_blob_or_names_python_serialization(files) -> None:
    for file in files:
        assert file.syntax == "proto3", f"{file.name} is not proto3"
        for name, message, _ in messages(file):
            for field in message.field:
                assert field.type_name not in OPAQUE_TYPES, f"{name}.{field.name} is an opaque {field.type_name}"
                assert not PYTHON_ONLY.search(field.name), f"{name}.{field.name}"


def test_every_enum_starts_with_its_unspecified_zero(files) -> None:
    enums = [(f"{file.package}.{e.name}", e) for file in files for e in file.enum_type]
    enums += [(f"{name}.{e.name}", e) for file in files for name, message, _ in messages(file) for e in message.enum_type]
    assert enums
    for name, enum in enums:
        zero = enum.value[0]
        assert zero.number == 0 and zero.name.endswith("_UNSPECIFIED"), f"{name} starts with {zero.name} = {zero.number}"


def test_nothing_that_serves_or_sends_the_wire_pickles() -> None:
    for root in ("replog", "services"):
        for path in (REPO_ROOT / root).rglob("*.py"):
            if "api" in path.relative_to(REPO_ROOT).parts[:2]:
                continue
            found = re.search(r"^\s*(import|from)\s+(pickle|marshal|shelve|dill|cloudpickle)\b", path.read_text(), re.M)
            assert not found, f"{Path(path).relative_to(REPO_ROOT)} imports {found.group(2)}"
