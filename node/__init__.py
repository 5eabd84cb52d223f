"""A running peer: configuration, the service composing crawler + p2p + metamodels, control API, CLI."""
