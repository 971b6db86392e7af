"""A Python service team's client: grpcio with stubs compiled from skift.proto at test
time, never skift's own code. A work cycle and every error class, over the unix socket and
over TCP with a bearer token; reflection, health and an unknown method."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import grpc
import pytest
from google.protobuf import duration_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc

# grpc.reflection.v1's messages. grpcio-reflection ships only v1alpha's, under the same
# protobuf names as the server package's own copy, which cannot share one process with
# them; the v1 messages are the ones any current client uses anyway.
from grpclib.reflection.v1 import reflection_pb2
from interop_harness import Server, Stubs

TRANSPORTS = ["unix", "tcp"]


class Client:
    """The stub with the transport's metadata on every call."""

    def __init__(self, server: Server, stubs: Stubs, transport: str) -> None:
        self.channel = server.channel(transport)
        self.stub: Any = stubs.rpc.SkiftServiceStub(self.channel)
        self.md = server.metadata(transport)
        self.pb = stubs.pb

    def __getattr__(self, method: str) -> Any:
        call = getattr(self.stub, method)
        return lambda request, **kw: call(request, metadata=self.md, timeout=30, **kw)


def _reason(stubs: Stubs, err: grpc.RpcError) -> tuple[str, dict[str, str], list[Any]]:
    """ErrorInfo's reason and metadata, and every detail, from grpc-status-details-bin."""
    trailers = dict(err.trailing_metadata() or ())  # pyright: ignore[reportAttributeAccessIssue]
    status = stubs.status.Status.FromString(trailers["grpc-status-details-bin"])
    found: list[Any] = []
    reason, meta = "", {}
    for any_ in status.details:
        for cls in (
            stubs.details.ErrorInfo,
            stubs.details.BadRequest,
            stubs.details.RetryInfo,
        ):
            if any_.Is(cls.DESCRIPTOR):
                msg = cls()
                any_.Unpack(msg)
                found.append(msg)
                if isinstance(msg, stubs.details.ErrorInfo):
                    reason, meta = msg.reason, dict(msg.metadata)
    return reason, meta, found


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_work_cycle(server: Server, stubs: Stubs, transport: str) -> None:
    """Two projects, a patch with aliases, Ready across projects, ClaimNext, Heartbeat,
    Complete, Explain, a gate and the change stream."""
    c = Client(server, stubs, transport)
    pb = c.pb
    tag = uuid.uuid4().hex[:6]
    first = c.CreateProject(pb.CreateProjectRequest(title=f"Alpha {tag}")).project
    second = c.CreateProject(
        pb.CreateProjectRequest(title=f"Beta {tag}", priority=pb.PRIORITY_P1)
    ).project
    assert second.priority == pb.PRIORITY_P1
    cursor = c.WatchEvents(pb.WatchEventsRequest(page_size=500)).next_page_token
    patch = c.Patch(
        pb.PatchRequest(
            project=first.slug,
            request_id=f"cycle-{tag}",
            ops=[
                pb.PatchOp(create_node=pb.CreateNodeOp(title="design", alias="d")),
                pb.PatchOp(create_node=pb.CreateNodeOp(title="build", alias="b", blocked_by=["d"])),
            ],
        )
    ).result
    design, build = patch.created["d"], patch.created["b"]
    c.Patch(
        pb.PatchRequest(
            project=second.slug, ops=[pb.PatchOp(create_node=pb.CreateNodeOp(title="other"))]
        )
    )
    ready = c.Ready(pb.ReadyRequest(filter=pb.NodeFilter(projects=[first.slug, second.slug])))
    assert {n.project for n in ready.nodes} == {first.slug, second.slug}
    assert build not in [n.ref for n in ready.nodes]

    claim = c.ClaimNext(
        pb.ClaimNextRequest(filter=pb.NodeFilter(projects=[first.slug]), harness="grpcio")
    ).claim
    assert claim.node.ref == design
    lease = claim.lease.id
    beat = c.Heartbeat(
        pb.HeartbeatRequest(ref=design, lease=lease, ttl=duration_pb2.Duration(seconds=120))
    ).lease
    assert beat.id == lease
    done = c.Complete(
        pb.CompleteRequest(ref=design, lease=lease, result="the design", request_id=f"c-{tag}")
    ).result
    assert done.nodes[0].status == pb.NODE_STATUS_DONE

    why = c.Explain(pb.ExplainRequest(ref=build))
    assert why.ready
    claim = c.Claim(pb.ClaimRequest(ref=build)).claim
    assert [i.result for i in claim.inputs] == ["the design"]
    gated = c.Gate(
        pb.GateRequest(
            ref=build, lease=claim.lease.id, title="Which database?", request_id=f"g-{tag}"
        )
    ).result
    gate = next(n for n in gated.nodes if n.assignee_kind == pb.ASSIGNEE_KIND_USER)
    why = c.Explain(pb.ExplainRequest(ref=build))
    assert not why.ready
    assert "blocked_by" in [r.kind for r in why.reasons]
    assert gate.title == "Which database?"

    seen: list[str] = []
    token = cursor
    while True:
        page = c.WatchEvents(pb.WatchEventsRequest(page_token=token, projects=[first.slug]))
        seen += [e.op for e in page.events]
        if not page.events:
            break
        token = page.next_page_token
    assert {"create_node", "claim", "complete_node"} <= set(seen)


def test_every_error_class(server: Server, stubs: Stubs) -> None:
    """Each class of error has its status and an ErrorInfo reason a generic client can
    branch on; INVALID_ARGUMENT names the field, UNAUTHENTICATED needs no skift at all."""
    c = Client(server, stubs, "unix")
    pb = c.pb
    tag = uuid.uuid4().hex[:6]
    p = c.CreateProject(pb.CreateProjectRequest(title=f"Errors {tag}")).project
    made = c.Patch(
        pb.PatchRequest(
            project=p.slug,
            ops=[
                pb.PatchOp(create_node=pb.CreateNodeOp(title="a", alias="a")),
                pb.PatchOp(create_node=pb.CreateNodeOp(title="b", alias="b", blocked_by=["a"])),
            ],
        )
    ).result
    a, b = made.created["a"], made.created["b"]

    def expect(code: grpc.StatusCode, reason: str, call: Any, request: Any) -> list[Any]:
        with pytest.raises(grpc.RpcError) as ei:
            call(request)
        err: Any = ei.value
        assert err.code() == code, err.details()
        got, _meta, details = _reason(stubs, err)
        assert got == reason
        assert " -- next: " in err.details()
        return details

    expect(grpc.StatusCode.NOT_FOUND, "NOT_FOUND", c.GetNode, pb.GetNodeRequest(ref=f"{p.slug}#99"))
    details = expect(
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_ARGUMENT",
        c.CreateProject,
        pb.CreateProjectRequest(title=""),
    )
    assert any(isinstance(d, stubs.details.BadRequest) for d in details)
    expect(grpc.StatusCode.FAILED_PRECONDITION, "NOT_READY", c.Claim, pb.ClaimRequest(ref=b))
    lease = c.Claim(pb.ClaimRequest(ref=a)).claim.lease.id
    expect(
        grpc.StatusCode.ABORTED,
        "FENCED",
        c.Heartbeat,
        pb.HeartbeatRequest(ref=a, lease="01J00000000000000000000000"),
    )
    c.Complete(pb.CompleteRequest(ref=a, lease=lease, result="ok", request_id=f"e-{tag}"))
    expect(
        grpc.StatusCode.ALREADY_EXISTS,
        "IDEMPOTENCY_MISMATCH",
        c.Complete,
        pb.CompleteRequest(ref=a, lease=lease, result="other", request_id=f"e-{tag}"),
    )
    expect(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "LIMIT_EXCEEDED",
        c.ListNodes,
        pb.ListNodesRequest(page_size=100_000),
    )
    expect(
        grpc.StatusCode.NOT_FOUND,
        "NOTHING_READY",
        c.ClaimNext,
        pb.ClaimNextRequest(filter=pb.NodeFilter(projects=[p.slug], labels=["none"])),
    )
    expect(
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_ARGUMENT",
        c.ListComments,
        pb.ListCommentsRequest(ref=a, page_token="not-a-token"),
    )
    # an agent may not administer principals: the policy says no
    c.AddPrincipal(pb.AddPrincipalRequest(name=f"bot-{tag}", kind=pb.PRINCIPAL_KIND_AGENT))
    bot_token = c.CreateToken(pb.CreateTokenRequest(principal=f"bot-{tag}")).token
    with grpc.insecure_channel(server.tcp) as ch:
        bot: Any = stubs.rpc.SkiftServiceStub(ch)
        with pytest.raises(grpc.RpcError) as ei:
            bot.CreateToken(
                pb.CreateTokenRequest(principal=f"bot-{tag}"),
                metadata=[("authorization", f"Bearer {bot_token}")],
                timeout=10,
            )
        err: Any = ei.value
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED
        assert _reason(stubs, err)[0] == "POLICY_DENIED"
        with pytest.raises(grpc.RpcError) as ei:
            bot.ListProjects(
                pb.ListProjectsRequest(),
                metadata=[("authorization", "Bearer not-a-token")],
                timeout=10,
            )
        err = ei.value
        assert err.code() == grpc.StatusCode.UNAUTHENTICATED


def test_every_list_pages(server: Server, stubs: Stubs) -> None:
    """Lists page by page_size/page_token/next_page_token and read every item once."""
    c = Client(server, stubs, "tcp")
    pb = c.pb
    tag = uuid.uuid4().hex[:6]
    p = c.CreateProject(pb.CreateProjectRequest(title=f"Pages {tag}")).project
    ops = [pb.PatchOp(create_node=pb.CreateNodeOp(title=f"n{k} {tag}")) for k in range(7)]
    c.Patch(pb.PatchRequest(project=p.slug, ops=ops))
    node = f"{p.slug}#1"
    for k in range(5):
        c.AddComment(pb.AddCommentRequest(ref=node, body=f"c{k}", request_id=f"{tag}-{k}"))

    def read(call: Any, make: Any, field: str) -> list[Any]:
        out: list[Any] = []
        token = ""
        while True:
            page = call(make(token))
            out += list(getattr(page, field))
            if not page.next_page_token:
                return out
            token = page.next_page_token

    nodes = read(
        c.ListNodes,
        lambda t: pb.ListNodesRequest(
            filter=pb.NodeFilter(projects=[p.slug]), page_size=3, page_token=t
        ),
        "nodes",
    )
    assert len({n.ref for n in nodes}) == 7
    comments = read(
        c.ListComments,
        lambda t: pb.ListCommentsRequest(ref=node, page_size=2, page_token=t),
        "comments",
    )
    assert [x.body for x in comments] == [f"c{k}" for k in range(5)]
    hits = read(
        c.Search,
        lambda t: pb.SearchRequest(query=tag, projects=[p.slug], page_size=2, page_token=t),
        "hits",
    )
    assert len({h.node.ref for h in hits}) == 7
    projects = read(
        c.ListProjects, lambda t: pb.ListProjectsRequest(page_size=1, page_token=t), "projects"
    )
    assert p.slug in [x.slug for x in projects]
    events = read(
        c.ListEvents,
        lambda t: pb.ListEventsRequest(ref=node, page_size=2, page_token=t),
        "events",
    )
    assert len({e.id for e in events}) == len(events) >= 6


def test_reflection_lists_the_services(server: Server) -> None:
    """grpcurl's first question: which services? Reflection answers, and describes them."""
    with server.channel("unix") as ch:
        info = ch.stream_stream(
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        got = list(
            info(
                iter(
                    [
                        reflection_pb2.ServerReflectionRequest(list_services=""),
                        reflection_pb2.ServerReflectionRequest(
                            file_containing_symbol="skift.v1.SkiftService"
                        ),
                    ]
                ),
                timeout=10,
            )
        )
    names = {s.name for s in got[0].list_services_response.service}
    assert {"skift.v1.SkiftService", "grpc.health.v1.Health"} <= names
    assert got[1].file_descriptor_response.file_descriptor_proto


def test_reflection_describes_a_method_with_its_comments(server: Server) -> None:
    """grpcurl's `describe skift.v1.SkiftService.ClaimNext`: the file that declares the
    method, with the proto's comments (source info) and the files it imports; a field and
    an enum value are found too, and an unknown symbol is NOT_FOUND naming it."""
    from google.protobuf import descriptor_pb2

    with server.channel("unix") as ch:
        info = ch.stream_stream(
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        asks = [
            "skift.v1.SkiftService.ClaimNext",
            "skift.v1.ClaimNextRequest.filter",
            "skift.v1.PRIORITY_P0",
            "skift.v1.NoSuchThing",
        ]
        got = list(
            info(
                iter(
                    reflection_pb2.ServerReflectionRequest(file_containing_symbol=a) for a in asks
                ),
                timeout=10,
            )
        )
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(b)
        for b in got[0].file_descriptor_response.file_descriptor_proto
    ]
    assert files[0].name == "skift/v1/skift.proto"
    assert {"google/protobuf/duration.proto", "google/protobuf/timestamp.proto"} <= {
        f.name for f in files
    }
    service = next(i for i, s in enumerate(files[0].service) if s.name == "SkiftService")
    method = next(
        i for i, m in enumerate(files[0].service[service].method) if m.name == "ClaimNext"
    )
    comments = {tuple(loc.path): loc.leading_comments for loc in files[0].source_code_info.location}
    assert "Take the next ready node in turn order" in comments[(6, service, 2, method)]
    for answer in got[1:3]:
        assert answer.file_descriptor_response.file_descriptor_proto
    assert got[3].error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]
    assert "skift.v1.NoSuchThing" in got[3].error_response.error_message


def test_health_check_and_watch(server: Server) -> None:
    """Check answers SERVING; Watch of an unknown service says SERVICE_UNKNOWN and stays
    open (the spec), Watch of the server says SERVING."""
    with server.channel("tcp") as ch:
        health = health_pb2_grpc.HealthStub(ch)
        got = health.Check(health_pb2.HealthCheckRequest(service="skift.v1.SkiftService"))
        assert got.status == health_pb2.HealthCheckResponse.SERVING
        watch = health.Watch(health_pb2.HealthCheckRequest(service="no.such.Service"))
        assert next(watch).status == health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
        ended = threading.Event()

        def drain() -> None:
            try:
                for _ in watch:
                    pass
                ended.set()
            except grpc.RpcError:  # cancelled below: the call was open until then
                pass

        threading.Thread(target=drain, daemon=True).start()
        assert not ended.wait(0.5), "Watch of an unknown service ended the call"
        watch.cancel()
        known = health.Watch(health_pb2.HealthCheckRequest(service=""))
        assert next(known).status == health_pb2.HealthCheckResponse.SERVING
        known.cancel()


def test_unknown_method_is_unimplemented(server: Server) -> None:
    with server.channel("unix") as ch:
        call = ch.unary_unary("/skift.v1.SkiftService/NoSuchMethod")
        with pytest.raises(grpc.RpcError) as ei:
            call(b"", timeout=10)
        err: Any = ei.value
        assert err.code() == grpc.StatusCode.UNIMPLEMENTED


def test_a_claim_of_twenty_megabytes_fits_the_default_limit(server: Server, stubs: Stubs) -> None:
    """A claim whose inputs total 20 MB answers under grpcio's default 4 MiB receive limit;
    ListInputs and ListArtifacts give the client every input whole."""
    c = Client(server, stubs, "unix")
    pb = c.pb
    tag = uuid.uuid4().hex[:6]
    p = c.CreateProject(pb.CreateProjectRequest(title=f"Big {tag}")).project
    count, part, result = 20, 63 * 1024, 255 * 1024
    ops = [
        pb.PatchOp(create_node=pb.CreateNodeOp(title=f"p{k}", alias=f"p{k}")) for k in range(count)
    ]
    ops.append(
        pb.PatchOp(
            create_node=pb.CreateNodeOp(
                title="sink", alias="sink", blocked_by=[f"p{k}" for k in range(count)]
            )
        )
    )
    made = c.Patch(pb.PatchRequest(project=p.slug, ops=ops)).result
    for k in range(count):
        parts = [pb.Part(text=pb.TextPart(text=f"{k}-{j}-" + "x" * part)) for j in range(12)]
        c.Complete(
            pb.CompleteRequest(
                ref=made.created[f"p{k}"],
                result=f"r{k}-" + "y" * result,
                artifacts=[pb.Artifact(name=f"a{k}", parts=parts)],
                request_id=f"{tag}-{k}",
            )
        )
    answer = c.Claim(pb.ClaimRequest(ref=made.created["sink"]))
    assert answer.ByteSize() < 4 * 1024 * 1024
    claim = answer.claim
    assert claim.next_inputs_page_token
    inputs = list(claim.inputs)
    token = claim.next_inputs_page_token
    while token:
        page = c.ListInputs(pb.ListInputsRequest(ref=claim.node.ref, page_token=token))
        assert page.ByteSize() < 4 * 1024 * 1024
        inputs += page.inputs
        token = page.next_page_token
    assert len(inputs) == count
    total = 0
    for k, got in enumerate(inputs):
        assert got.result == f"r{k}-" + "y" * result
        artifacts = list(got.artifacts)
        if got.artifacts_cut:
            artifacts, token = [], ""
            while True:
                page = c.ListArtifacts(pb.ListArtifactsRequest(ref=got.ref, page_token=token))
                artifacts += page.artifacts
                if not (token := page.next_page_token):
                    break
        texts = [x.text.text for x in artifacts[0].parts]
        assert texts == [f"{k}-{j}-" + "x" * part for j in range(12)]
        total += len(got.result) + sum(len(t) for t in texts)
    assert total > 20_000_000
