# skift's default authorization policy.
#
# Evaluated by the engine on the resolved request, inside its transaction:
# aliases resolved, cascades expanded, the state of every touched node given
# as facts. One denial refuses the whole request and rolls it back. Every
# denial carries `msg` (the rule, naming the node) and `next` (what to do
# instead), because a refusal an agent reads is the next thing it acts on.
#
# Input (built by skift's engine, never by a client):
#   principal: {id, name, kind: user|agent|service, admin}
#     admin: the principal has its organization's admin role (people only),
#            read in the request's transaction for the actions it decides
#   lease:     {id, node} | null      the lease the request carries, verified live and held
#   intents:   [{action, index, node, parent, from, to, changes, cascade}]
#     action: create | update | drop | complete | reopen | link | unlink |
#             hold | unhold | claim | focus | hold_project | unhold_project |
#             create_project | update_project | archive_project | admin |
#             comment | edit_comment | resolve_comment | preempt | import |
#             own_token | list_principals | sweep
#     (import: a beads import, writing many nodes at once; a person's act)
#     (admin: administer the organization's principals: add one, mint or
#      revoke a token for another, invite or bind an identity, grant or
#      revoke the admin role; an admin's act)
#     (own_token: mint or revoke one's own token; list_principals: list the
#      organization's principals; sweep: record expired leases; a person's)
#     (set_policy: set or reset the organization's own Rego; asked of the
#      base policy alone, never of the organization's modules; an admin's act)
#     node, parent, from, to: facts about a node, or null:
#       {ref, project, gate, status, filed_by_me, new, in_my_lease}
#         gate         assignee_kind is user: a person must complete it
#         filed_by_me  the acting principal created it
#         new          created earlier in this same request
#         in_my_lease  the node the request's lease is on, or under it
#                      through nodes the principal filed itself
#     changes: the fields an update changes
#     comment: for edit_comment and resolve_comment, facts about the comment:
#       {id, mine, resolved}   mine: the acting principal wrote it
#
# The rules are the domain model's "Default policy". Users may do anything
# (a person running an agent under their own uid is that person) except what
# only an admin of the organization does (admin_actions). Agents and services
# may file work, work under a lease, and ask through gates. Anything not
# permitted below is refused with a pointer to a gate.
package skift.authz

import rego.v1

kinds := {"user", "agent", "service"}

actions := {
	"create", "update", "drop", "complete", "reopen", "link", "unlink",
	"hold", "unhold", "claim", "focus", "hold_project", "unhold_project",
	"create_project", "update_project", "archive_project", "admin",
	"comment", "edit_comment", "resolve_comment", "preempt", "import",
	"set_policy", "own_token", "list_principals", "sweep",
}

person if input.principal.kind == "user"

# The organization's admin role: people only (an agent is never an admin).
admin if {
	person
	input.principal.admin == true
}

# What only an admin of the organization does: administer its principals
# (add one, mint or revoke a token for another, invite or bind an identity,
# grant or revoke the role), set or reset its stored policy, and restrict or
# unrestrict a project. A person mints and revokes their own tokens.
admin_actions := {"admin", "set_policy", "restrict_project", "unrestrict_project"}

# ---------------------------------------------------------------- what is whose

# The engine's facts about a node. Facts missing or partial grant nothing.
known(n) if {
	is_boolean(n.gate)
	is_boolean(n.filed_by_me)
	is_boolean(n.new)
	is_boolean(n.in_my_lease)
}

# May change the node's own fields and status: the node it holds a lease on,
# the children it files under it, and what it files in this request.
writable(n) if {
	known(n)
	n.in_my_lease == true
}

writable(n) if {
	known(n)
	n.new == true
}

# May change the node's readiness by an edge into it: anything writable, and
# what it filed (it may block and unblock what it filed without a lease).
linkable(n) if writable(n)

linkable(n) if {
	known(n)
	n.filed_by_me == true
}

# ---------------------------------------------------------------- permissions

permitted(i) if {
	person
	not i.action in admin_actions
}

permitted(i) if {
	i.action in admin_actions
	admin
}

# File work: at a project's root, under a lineage it filed, or under its lease.
permitted(i) if {
	i.action == "create"
	i.parent == null
}

permitted(i) if {
	i.action == "create"
	linkable(i.parent)
}

permitted(i) if {
	i.action == "update"
	writable(i.node)
	is_array(i.changes)
	not gate_disposal(i)
	not foreign_reparent(i)
}

permitted(i) if {
	i.action in {"drop", "reopen"}
	writable(i.node)
	not i.node.gate
}

permitted(i) if {
	i.action == "complete"
	writable(i.node)
	not i.node.gate
}

# Block what it filed (or holds) on anything it can see in the project;
# across projects it also needs write on the source.
permitted(i) if {
	i.action == "link"
	linkable(i.to)
	i.from.project == i.to.project
}

permitted(i) if {
	i.action == "link"
	linkable(i.to)
	writable(i.from)
}

permitted(i) if {
	i.action == "unlink"
	linkable(i.to)
	known(i.from)
	not i.from.gate
}

permitted(i) if {
	i.action == "claim"
	known(i.node)
	not i.node.gate
}

# Creating a project is a person's call (SURFACE's rulings): an agent files
# work in existing projects only. A new project is also live under an
# organization-wide focus, so an agent creating one would escape the focus.

# ---------------------------------------------------------------- comments

# Any principal of the organization may comment on a node it can read (in the
# default policy, every node of the organization): a comment is how an agent
# says what it cannot do itself.
permitted(i) if {
	i.action == "comment"
	known(i.node)
}

# A comment is edited only by its author, a person included: an edit speaks
# in the author's name (see comment_of_another below).
permitted(i) if {
	i.action == "edit_comment"
	i.comment.mine == true
}

# An agent resolves a comment it wrote, or one on work it filed or holds a
# lease on: the worker who addressed the note says so. A person resolves any.
permitted(i) if {
	i.action == "resolve_comment"
	i.comment.mine == true
}

permitted(i) if {
	i.action == "resolve_comment"
	linkable(i.node)
}

# ---------------------------------------------------------------- gate rules

gate_disposal(i) if {
	i.node.gate
	some field in i.changes
	field in {"assignee", "assignee_kind"}
}

foreign_reparent(i) if {
	"parent" in i.changes
	not i.parent == null
	not linkable(i.parent)
}

# ---------------------------------------------------------------- denials

deny contains {"msg": "the request's principal is malformed", "next": "Authenticate as a registered principal and retry."} if {
	not input.principal.kind in kinds
}

deny contains {"msg": "the request is malformed", "next": "Send the request through skift's API."} if {
	not is_array(input.intents)
}

deny contains {"msg": "an intent of the request is malformed", "next": "Send the request through skift's API."} if {
	some i in input.intents
	not well_formed(i)
}

well_formed(i) if {
	is_object(i)
	i.action in actions
}

well_formed(i) if {
	is_object(i)
	i.action in accounting_actions
}

well_formed(i) if {
	is_object(i)
	i.action == "manage_webhook"
}

deny contains d if {
	some i in input.intents
	well_formed(i)
	not permitted(i)
	d := denial(i)
}

# Editing another's comment is refused to everyone, a person included.
deny contains d if {
	some i in input.intents
	well_formed(i)
	comment_of_another(i)
	d := denial(i)
}

comment_of_another(i) if {
	i.action == "edit_comment"
	not i.comment.mine == true
}

# Not permitted and no specific message (facts missing): still a denial.
deny contains {"msg": sprintf("%s is not permitted", [i.action]), "next": "File a gate asking a person to do it."} if {
	some i in input.intents
	well_formed(i)
	not permitted(i)
	not denial(i)
}

verb := {
	"drop": "drop",
	"complete": "complete",
	"update": "reassign or reclassify",
	"unlink": "unlink",
}

denial(i) := {
	"msg": sprintf("%s is a gate you filed; an agent may not %s it", [gate.ref, verb[i.action]]),
	"next": "Ask its assignee to complete it, or comment on it.",
} if {
	gate := gate_of(i)
	gate.filed_by_me
} else := {
	"msg": sprintf("%s is a gate: only a person may %s it", [gate.ref, verb[i.action]]),
	"next": "Ask its assignee to complete it, or comment on it.",
} if {
	gate := gate_of(i)
} else := {
	"msg": sprintf("%s is a gate: a person must act on it", [i.node.ref]),
	"next": "Work on something else (ready work), or comment on the gate; its assignee completes it.",
} if {
	i.action == "claim"
} else := {
	"msg": "only a person may hold or release work",
	"next": "If this work should be parked, say so in a comment on it, or file a gate asking a person to hold it.",
} if {
	i.action in {"hold", "unhold", "focus", "hold_project", "unhold_project"}
} else := {
	"msg": sprintf("an agent files work at a project's root, under work it filed, or under the node it holds a lease on; %s is none of these", [i.parent.ref]),
	"next": sprintf("File it at the root (no parent), or file a gate asking a person to place it under %s.", [i.parent.ref]),
} if {
	i.action in {"create", "update"}
	i.parent != null
	not linkable(i.parent)
} else := {
	"msg": sprintf("%s is not yours to block or unblock: an agent changes the readiness only of work it filed or holds a lease on", [i.to.ref]),
	"next": sprintf("Claim %s and send its lease, or file a gate asking a person to link it.", [i.to.ref]),
} if {
	i.action in {"link", "unlink"}
	not linkable(i.to)
} else := {
	"msg": sprintf("%s is in another project, and an agent links across projects only from work it may write", [i.from.ref]),
	"next": "Link from the node you hold a lease on, or file a gate asking a person to link them.",
} if {
	i.action == "link"
} else := {
	"msg": sprintf("%s is not yours to change: an agent changes only the node it holds a lease on and the children it filed under it", [i.node.ref]),
	"next": sprintf("Claim %s and send the lease with the write, or file a gate to ask a person.", [i.node.ref]),
} if {
	i.action in {"update", "drop", "complete", "reopen", "attach"}
} else := {
	"msg": "only a person may rename, re-prioritize or archive a project",
	"next": "File a gate asking a person to change the project.",
} if {
	i.action in {"update_project", "archive_project"}
} else := {
	"msg": sprintf("comment %s on %s was written by someone else; only its author edits it", [i.comment.id, i.node.ref]),
	"next": "Reply to it instead (add_comment with reply_to).",
} if {
	i.action == "edit_comment"
} else := {
	"msg": sprintf("an agent resolves only its own comments, or comments on work it filed or holds a lease on; %s is none of these", [i.node.ref]),
	"next": sprintf("Reply to the comment saying it is addressed, or claim %s first; a person may resolve it.", [i.node.ref]),
} if {
	i.action == "resolve_comment"
} else := {
	"msg": "only a person creates a project: an agent files work in existing projects",
	"next": "File the work in an existing project, or file a gate there asking a person to create the project.",
} if {
	i.action == "create_project"
} else := {
	"msg": sprintf("only a person takes back a lease on %s", [i.node.ref]),
	"next": "Release your own lease with its id (reason crash or budget), or file a gate asking a person to preempt it.",
} if {
	i.action == "preempt"
} else := {
	"msg": "only an admin of the organization sets its policy",
	"next": "Ask an admin of the organization to change it (the list of principals shows who is one), or file a gate asking them.",
} if {
	i.action == "set_policy"
} else := {
	"msg": sprintf("only an admin of the organization restricts who reads %s", [i.project]),
	"next": "Ask an admin of the organization to restrict or unrestrict the project (the list of principals shows who is one), or file a gate asking them.",
} if {
	i.action in {"restrict_project", "unrestrict_project"}
} else := {
	"msg": "only a person administers principals, identities and tokens",
	"next": "Ask an admin of the organization (a person) to do it.",
} if {
	i.action in {"admin", "own_token", "list_principals", "sweep"}
	not person
} else := {
	"msg": "only an admin of the organization adds principals, binds identities, grants the admin role, and mints or revokes another principal's tokens",
	"next": "Ask an admin of the organization to do it (the list of principals shows who is one); you may mint and revoke your own tokens.",
} if {
	i.action == "admin"
} else := {
	"msg": sprintf("an agent may not %s", [i.action]),
	"next": "File a gate asking a person to do it.",
}

gate_of(i) := i.node if {
	i.action in {"drop", "complete"}
	i.node.gate
}

gate_of(i) := i.node if {
	i.action == "update"
	gate_disposal(i)
}

gate_of(i) := i.from if {
	i.action == "unlink"
	i.from.gate
}

# ---------------------------------------------------------------- usage, cost and artifacts
#
#   attach        attach an artifact to a node: like update, the agent's own
#                 leased node or what it filed in this request
#   record_usage  a usage record; the intent carries usage: {kind, leased}
#                 (leased: the request carried the node's live lease, checked
#                 as a fencing token before the policy is asked)
#   set_rate      change the organization's rate table
#   set_org_limits  lower the server's size limits for the organization
#   update with "cap" in changes: a hard cap on a node, checked at Claim
#   put_blob      upload a blob's bytes (attached later); asked before a byte of
#                 the upload is read, so a policy that keeps someone from
#                 uploading costs the server nothing for their attempts

accounting_actions := {"attach", "record_usage", "set_rate", "set_org_limits", "put_blob"}

permitted(i) if {
	i.action == "attach"
	writable(i.node)
}

# Estimates need no lease: anyone who can see a node may say what it will
# cost (the record names them). An actual says what an attempt consumed, so
# an agent records it under that attempt's lease; that keeps each attempt's
# spend apart, and a retry never collapses into the original.
permitted(i) if i.action == "record_usage"

permitted(i) if i.action == "set_rate"

# Anyone uploads: an agent attaches what its work produced.
permitted(i) if i.action == "put_blob"

permitted(i) if i.action == "set_org_limits"

deny contains {
	"msg": sprintf("an agent records actual usage of %s under the lease of the attempt it measures", [i.node.ref]),
	"next": "Send the lease Claim returned with the record, or record an estimate (estimate, with a basis).",
} if {
	some i in input.intents
	i.action == "record_usage"
	not person
	not i.usage.kind == "estimate"
	not i.usage.leased == true
}

deny contains {
	"msg": "only a person sets the organization's rates",
	"next": "Ask a person to set the rate; usage is recorded in tokens meanwhile and the model is reported as unpriced.",
} if {
	some i in input.intents
	i.action == "set_rate"
	not person
}

# A size limit refuses content for every principal of the organization.
deny contains {
	"msg": "only a person sets the organization's size limits",
	"next": "Ask a person to set them; the server's limits apply meanwhile.",
} if {
	some i in input.intents
	i.action == "set_org_limits"
	not person
}

# A cap stops work at Claim, so setting, raising or clearing one is a person's call.
deny contains {
	"msg": sprintf("only a person may set the cap on %s", [i.node.ref]),
	"next": "Set a budget instead (it is reported, not enforced), or file a gate asking a person to set the cap.",
} if {
	some i in input.intents
	i.action == "update"
	"cap" in i.changes
	not person
}

# ---------------------------------------------------------------- webhooks
#
#   manage_webhook  add, rotate, disable, enable or test a project's webhook
#                   endpoint, or redeliver one of its deliveries; the intent
#                   carries project (its slug). An endpoint sends a project's
#                   changes to an address outside skift, so it is a person's call.

permitted(i) if i.action == "manage_webhook"

deny contains {
	"msg": sprintf("only a person manages the webhooks of %s", [i.project]),
	"next": "File a gate asking a person to do it (say which URL and which events), or watch the change stream yourself.",
} if {
	some i in input.intents
	i.action == "manage_webhook"
	not person
}

# ---------------------------------------------------------------- reads
#
# The read decision, asked once per request (not per row) with its own input:
#   principal:  {id, name, kind, admin}
#   restricted: [{id, slug, readers, reader_names}]  the organization's projects
#               that carry a reader list ('skift project restrict'); readers are
#               principal ids, reader_names their names
# and answering `unreadable`: the projects (ids, or slugs) the principal may not
# read. Every read path leaves them out, exactly as a slug nobody created, and a
# write into one finds nothing to write to.
#
# By default everyone in the organization reads everything (a project inherits
# the organization's policy and diverges only when someone restricts it); a
# restricted project is read by its readers only. An organization's own modules
# may add to both sets:
#   readable contains "payroll" if input.principal.name == "auditor"
#   unreadable contains "hr" if not input.principal.kind == "user"

unreadable contains p.id if {
	some p in input.restricted
	not p.id in readable
	not p.slug in readable
}

readable contains p.id if {
	some p in input.restricted
	input.principal.id in p.readers
}

# Restricting and unrestricting a project is an admin's call (admin_actions:
# hiding work from the organization is a decision someone answers for). An
# admin who is not a reader of a restricted project does not read it either:
# restricting it again adds the admin to its readers, and the event says so.
actions_read := {"restrict_project", "unrestrict_project"}

well_formed(i) if {
	is_object(i)
	i.action in actions_read
}
