"""Server reflection (grpc.reflection.v1 and v1alpha) over skift's compiled contract.

grpcurl, Postman and other generic clients discover the API by asking the
server: which services it offers and the file descriptors (with their
comments) that define them. grpclib ships the reflection service; it answers
from a protobuf descriptor pool, re-serializing each file from the pool, and
the pool keeps no source information, so its answers carried no comments; it
also found no file for a method's full name (``skift.v1.SkiftService.ClaimNext``),
which is what grpcurl's ``describe`` of a method asks for.

Here the files are answered with the bytes ``make generate`` compiled beside the
generated code (``_proto/descriptors.binpb``, ``protoc --include_source_info``),
so every comment of the proto reaches the client, and a symbol is looked up by
every name the file declares: packages' messages and their nested types, fields,
enums and their values, services and their methods. A file is answered together
with the files it imports, as the reference servers do, so a client needs one
round trip per symbol.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2
from grpclib.const import Status
from grpclib.reflection.v1 import reflection_grpc as v1_grpc
from grpclib.reflection.v1 import reflection_pb2 as v1_pb
from grpclib.reflection.v1alpha import reflection_grpc as v1alpha_grpc
from grpclib.reflection.v1alpha import reflection_pb2 as v1alpha_pb


def _files() -> list[descriptor_pb2.FileDescriptorProto]:
    data = resources.files("skift_server._proto").joinpath("descriptors.binpb").read_bytes()
    return list(descriptor_pb2.FileDescriptorSet.FromString(data).file)


def _message_symbols(prefix: str, msg: descriptor_pb2.DescriptorProto) -> Iterable[str]:
    name = f"{prefix}.{msg.name}"
    yield name
    for field in msg.field:
        yield f"{name}.{field.name}"
    for oneof in msg.oneof_decl:
        yield f"{name}.{oneof.name}"
    for nested in msg.nested_type:
        yield from _message_symbols(name, nested)
    for enum in msg.enum_type:
        yield from _enum_symbols(name, enum)


def _enum_symbols(prefix: str, enum: descriptor_pb2.EnumDescriptorProto) -> Iterable[str]:
    name = f"{prefix}.{enum.name}"
    yield name
    for value in enum.value:
        # protobuf scopes an enum's values beside the enum, not inside it
        yield f"{prefix}.{value.name}"
        yield f"{name}.{value.name}"


def symbols(f: descriptor_pb2.FileDescriptorProto) -> Iterable[str]:
    """Every fully qualified name ``f`` declares."""
    prefix = f.package
    for msg in f.message_type:
        yield from _message_symbols(prefix, msg)
    for enum in f.enum_type:
        yield from _enum_symbols(prefix, enum)
    for service in f.service:
        name = f"{prefix}.{service.name}"
        yield name
        for method in service.method:
            yield f"{name}.{method.name}"
    for ext in f.extension:
        yield f"{prefix}.{ext.name}"


class _Answers:
    """What reflection answers, by file name and by symbol, whatever the protocol's version."""

    def __init__(self) -> None:
        files = _files()
        self.by_name = {f.name: f for f in files}
        self.bytes = {f.name: f.SerializeToString() for f in files}
        self.by_symbol: dict[str, str] = {}
        for f in files:
            for symbol in symbols(f):
                self.by_symbol.setdefault(symbol, f.name)

    def with_imports(self, name: str) -> list[bytes]:
        """The file ``name`` first, then every file it imports, transitively, once each."""
        order: list[str] = []
        todo = [name]
        while todo:
            n = todo.pop(0)
            if n in order or n not in self.by_name:
                continue
            order.append(n)
            todo.extend(self.by_name[n].dependency)
        return [self.bytes[n] for n in order]


def _serve(pb: Any, answers: _Answers, services: list[str]) -> Any:
    """The ServerReflectionInfo handler for one version's messages (``pb``)."""

    def not_found(what: str) -> Any:
        return pb.ServerReflectionResponse(
            error_response=pb.ErrorResponse(
                error_code=Status.NOT_FOUND.value, error_message=f"{what} not found"
            )
        )

    def files(name: str | None, what: str) -> Any:
        if name is None or name not in answers.by_name:
            return not_found(what)
        return pb.ServerReflectionResponse(
            file_descriptor_response=pb.FileDescriptorResponse(
                file_descriptor_proto=answers.with_imports(name)
            )
        )

    def answer(request: Any) -> Any:
        which = request.WhichOneof("message_request")
        if which == "list_services":
            return pb.ServerReflectionResponse(
                list_services_response=pb.ListServiceResponse(
                    service=[pb.ServiceResponse(name=n) for n in services]
                )
            )
        if which == "file_by_filename":
            return files(request.file_by_filename, f"file {request.file_by_filename!r}")
        if which == "file_containing_symbol":
            symbol = request.file_containing_symbol.lstrip(".")
            return files(answers.by_symbol.get(symbol), f"symbol {symbol!r}")
        if which == "file_containing_extension":
            return not_found("extension")  # skift's contract declares none
        if which == "all_extension_numbers_of_type":
            name = request.all_extension_numbers_of_type.lstrip(".")
            if name not in answers.by_symbol:
                return not_found(f"type {name!r}")
            return pb.ServerReflectionResponse(
                all_extension_numbers_response=pb.ExtensionNumberResponse(base_type_name=name)
            )
        return pb.ServerReflectionResponse(
            error_response=pb.ErrorResponse(
                error_code=Status.INVALID_ARGUMENT.value,
                error_message="the request names no question",
            )
        )

    async def info(stream: Any) -> None:
        async for request in stream:
            reply = answer(request)
            reply.original_request.CopyFrom(request)
            await stream.send_message(reply)

    return info


class ContractReflection(v1_grpc.ServerReflectionBase):
    """grpc.reflection.v1 over the compiled contract, comments included."""

    def __init__(self, answers: _Answers, services: list[str]) -> None:
        self._info = _serve(v1_pb, answers, services)

    async def ServerReflectionInfo(self, stream: Any) -> None:
        await self._info(stream)


class ContractReflectionV1Alpha(v1alpha_grpc.ServerReflectionBase):
    """The same on grpc.reflection.v1alpha, which older clients (and grpcurl) still ask first."""

    def __init__(self, answers: _Answers, services: list[str]) -> None:
        self._info = _serve(v1alpha_pb, answers, services)

    async def ServerReflectionInfo(self, stream: Any) -> None:
        await self._info(stream)


def with_reflection(services: list[Any]) -> list[Any]:
    """``services`` and the reflection services (v1 and v1alpha) that describe them."""
    # a servable's routes are "/package.Service/Method"
    names = [next(iter(s.__mapping__())).split("/")[1] for s in services]
    answers = _Answers()
    return [
        *services,
        ContractReflection(answers, names),
        ContractReflectionV1Alpha(answers, names),
    ]
