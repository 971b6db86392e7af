"""The ``skift`` command modules, one per command group; ``skift_cli._app`` lists which load."""
