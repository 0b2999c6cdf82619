"""One module per command group; see localrag/cli.py."""
