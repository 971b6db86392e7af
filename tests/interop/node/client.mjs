// A Node service team's skift client: @grpc/grpc-js with skift.proto loaded at run time by
// @grpc/proto-loader, nothing else. Run by tests/interop/test_node.py:
//
//   node client.mjs <proto dir> <unix socket path> <host:port> <bearer token>
//
// It runs a work cycle over the unix socket and over TCP with the token, then one call of
// each error class, and prints one JSON document of what it saw for the test to check.

import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");
const protobuf = require("protobufjs");

const [protoDir, socketPath, tcpAddress, token] = process.argv.slice(2);

const definition = protoLoader.loadSync("skift/v1/skift.proto", {
  includeDirs: [protoDir],
  keepCase: true,
  enums: String,
  longs: Number,
  defaults: true,
  oneofs: true,
});
const skift = grpc.loadPackageDefinition(definition).skift.v1;

// google.rpc.Status and its details, to read grpc-status-details-bin.
const rpc = new protobuf.Root();
rpc.resolvePath = (_origin, target) => path.join(protoDir, target);
rpc.loadSync(["google/rpc/status.proto", "google/rpc/error_details.proto"]);
const Status = rpc.lookupType("google.rpc.Status");
const ErrorInfo = rpc.lookupType("google.rpc.ErrorInfo");

function client(transport) {
  const address = transport === "unix" ? `unix://${socketPath}` : tcpAddress;
  const stub = new skift.SkiftService(address, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (transport === "tcp") metadata.set("authorization", `Bearer ${token}`);
  const call = (method, request) =>
    new Promise((resolve, reject) => {
      stub[method](request, metadata, { deadline: Date.now() + 30000 }, (err, reply) =>
        err ? reject(err) : resolve(reply),
      );
    });
  return { call, close: () => stub.close() };
}

function reasonOf(err) {
  const raw = err.metadata?.get("grpc-status-details-bin")?.[0];
  if (!raw) return "";
  const status = Status.decode(raw);
  for (const detail of status.details) {
    if (detail.type_url === "type.googleapis.com/google.rpc.ErrorInfo") {
      return ErrorInfo.decode(detail.value).reason;
    }
  }
  return "";
}

async function workCycle(transport) {
  const { call, close } = client(transport);
  const tag = `${transport}${Date.now().toString(36)}`;
  const alpha = (await call("CreateProject", { title: `Node alpha ${tag}` })).project;
  const beta = (await call("CreateProject", { title: `Node beta ${tag}`, priority: "PRIORITY_P1" }))
    .project;
  const cursor = (await call("WatchEvents", { page_size: 500 })).next_page_token;
  const patch = (
    await call("Patch", {
      project: alpha.slug,
      request_id: `node-${tag}`,
      ops: [
        { create_node: { title: "design", alias: "d" } },
        { create_node: { title: "build", alias: "b", blocked_by: ["d"] } },
      ],
    })
  ).result;
  await call("Patch", { project: beta.slug, ops: [{ create_node: { title: "other" } }] });
  const ready = await call("Ready", { filter: { projects: [alpha.slug, beta.slug] } });
  const claim = (await call("ClaimNext", { filter: { projects: [alpha.slug] }, harness: "node" }))
    .claim;
  const beat = (
    await call("Heartbeat", { ref: claim.node.ref, lease: claim.lease.id, ttl: { seconds: 60 } })
  ).lease;
  const done = (
    await call("Complete", {
      ref: claim.node.ref,
      lease: claim.lease.id,
      result: "the design",
      request_id: `done-${tag}`,
    })
  ).result;
  const explained = await call("Explain", { ref: patch.created.b });
  const second = (await call("Claim", { ref: patch.created.b })).claim;
  const gated = (
    await call("Gate", {
      ref: patch.created.b,
      lease: second.lease.id,
      title: "Which database?",
      request_id: `gate-${tag}`,
    })
  ).result;
  const events = await call("WatchEvents", { page_token: cursor, projects: [alpha.slug] });
  close();
  return {
    beta_priority: beta.priority,
    ready_projects: [...new Set(ready.nodes.map((n) => n.project))].sort(),
    expected_projects: [alpha.slug, beta.slug].sort(),
    claimed: claim.node.ref,
    design: patch.created.d,
    heartbeat_same_lease: beat.id === claim.lease.id,
    completed_status: done.nodes[0].status,
    build_ready_after: explained.ready,
    inputs: second.inputs.map((i) => i.result),
    gate_kinds: gated.nodes.map((n) => n.assignee_kind),
    ops: [...new Set(events.events.map((e) => e.op))].sort(),
  };
}

async function errors() {
  const { call, close } = client("unix");
  const tag = `err${Date.now().toString(36)}`;
  const p = (await call("CreateProject", { title: `Node errors ${tag}` })).project;
  const made = (
    await call("Patch", {
      project: p.slug,
      ops: [
        { create_node: { title: "a", alias: "a" } },
        { create_node: { title: "b", alias: "b", blocked_by: ["a"] } },
      ],
    })
  ).result;
  const seen = {};
  const attempt = async (name, method, request) => {
    try {
      await call(method, request);
      seen[name] = { code: "OK" };
    } catch (err) {
      seen[name] = { code: grpc.status[err.code], reason: reasonOf(err), details: err.details };
    }
  };
  await attempt("not_found", "GetNode", { ref: `${p.slug}#99` });
  await attempt("invalid", "CreateProject", { title: "" });
  await attempt("not_ready", "Claim", { ref: made.created.b });
  await call("Claim", { ref: made.created.a });
  await attempt("fenced", "Heartbeat", { ref: made.created.a, lease: "01J00000000000000000000000" });
  await attempt("limit", "ListNodes", { page_size: 100000 });
  await attempt("nothing_ready", "ClaimNext", { filter: { projects: [p.slug] } });
  close();
  const stranger = new skift.SkiftService(tcpAddress, grpc.credentials.createInsecure());
  const bad = new grpc.Metadata();
  bad.set("authorization", "Bearer not-a-token");
  await new Promise((resolve) =>
    stranger.ListProjects({}, bad, (err) => {
      seen.unauthenticated = { code: err ? grpc.status[err.code] : "OK", reason: err ? reasonOf(err) : "" };
      resolve();
    }),
  );
  stranger.close();
  return seen;
}

const out = { unix: await workCycle("unix"), tcp: await workCycle("tcp"), errors: await errors() };
process.stdout.write(JSON.stringify(out) + "\n");
