"""The `skift` command line (being built: issue 6)."""


def main() -> None:
    raise SystemExit("skift: the command line is being built")
