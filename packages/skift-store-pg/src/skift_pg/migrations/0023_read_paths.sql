-- 0023: the last read paths around a restriction, and revocation that ends what a
-- credential opened (issue 28; docs/identity.md, docs/board.md).
--
-- A blob is read only through an artifact the reader may read (skift._artifacts):
-- which artifacts name a digest is asked on every GetBlob, so the parts are
-- indexed for containment (`parts @> '[{"type": "blob", "digest": ...}]'`).
CREATE INDEX artifacts_parts ON artifacts USING gin (parts jsonb_path_ops);

-- A board sign-in code remembers the identity (a bearer token, a uid, an OIDC
-- subject) it was minted through, and the session it is spent for inherits it:
-- once that identity is revoked, neither works any more. NULL: minted in
-- process, by no credential. `id` names a session to its person (`skift board
-- sessions`) without its secret.
ALTER TABLE signins
    ADD COLUMN id uuid,
    ADD COLUMN identity_id uuid REFERENCES identities (id);
CREATE INDEX signins_principal ON signins (principal_id) WHERE spent_at IS NULL;
