"""Server reflection (grpc.reflection.v1 and v1alpha) over skift's compiled contract.

grpcurl, Postman and other generic clients discover the API by asking the
server: which services it offers and the file descriptors (with their
comments) that define them. grpclib ships the reflection service; it answers
from a protobuf descriptor pool, which is filled here from the descriptor set
``make generate`` compiles beside the generated code
(``_proto/descriptors.binpb``), so reflection always describes exactly the
contract this build serves.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool
from grpclib.reflection.service import ServerReflection


def pool() -> Any:
    """A descriptor pool holding every file of skift's contract and its imports."""
    data = resources.files("skift_server._proto").joinpath("descriptors.binpb").read_bytes()
    files = descriptor_pb2.FileDescriptorSet.FromString(data)
    out = descriptor_pool.DescriptorPool()
    for f in files.file:  # protoc writes them in dependency order
        out.Add(f)
    return out


def with_reflection(services: list[Any]) -> list[Any]:
    """``services`` and the reflection services that describe them."""
    return list(ServerReflection.extend(services, pool=pool()))
