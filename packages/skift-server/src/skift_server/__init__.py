"""Reserved: built by a later issue (see README)."""
