"""The Textual terminal UI: a client of a node's control API only."""
