"""Versioned, strictly validated wire messages.

Every message is a frozen dataclass with `to_wire()` (a plain msgpack-able dict: ``{"type", "version",
...fields}``) and `from_wire()` (the only way a peer's dict becomes a message). `from_wire` checks
required fields and their types, rejects unknown fields and unknown schema versions, caps every string
and every list, accepts finite floats only (also inside float32 byte arrays) and checks that model
weights match the declared feature space. Each violation raises `WireError` with a stable reason. Single
values are checked by `p2p.value_checks`; this package reads whole messages from them.

`envelope` holds what every message shares; each protocol's messages have a module of their own:
`membership`, `models`, `results` and `meta_classifier`.
"""

# Loaded with the package, so `envelope.MESSAGE_TYPES` knows every message type whichever module a process
# imports first, and `message_from_wire` dispatches on all of them.
from p2p.messages import membership, meta_classifier, models, results  # noqa: F401
