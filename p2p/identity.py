"""The node's persistent Ed25519 identity: its peer id survives restarts, so neighbours and signatures hold.

The key file holds the libp2p protobuf encoding of the private key (what other libp2p implementations read).
Like ssh, a key file that others may read is refused rather than silently used or silently re-moded: the
key may already have leaked, and the user should decide (`chmod 600 <file>`, or delete it for a new id).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.crypto.keys import KeyPair
from libp2p.crypto.serialization import deserialize_private_key
from libp2p.peer.id import ID

from p2p.errors import P2PError

KEY_FILE_MODE = 0o600


class IdentityError(P2PError):
    """The identity key file cannot be used; the message says what to do about it."""


def load_or_create_identity(path: Path) -> KeyPair:
    """The key pair stored at `path` (e.g. `DataDir.identity`), created with mode 0600 on first start."""
    if not path.exists():
        return _create(path)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise IdentityError(
            f"identity key {path} is readable by others (mode {mode:o}); "
            f"run `chmod 600 {path}` if it never left your account, or delete it to get a new peer id"
        )
    try:
        private_key = deserialize_private_key(path.read_bytes())
    except Exception as exc:
        raise IdentityError(
            f"identity key {path} is not a libp2p private key ({exc}); delete it to get a new peer id"
        ) from exc
    if private_key.get_type().name != "Ed25519":
        raise IdentityError(f"identity key {path} is not Ed25519; delete it to get a new peer id")
    return KeyPair(private_key, private_key.get_public_key())


def peer_id_of(key_pair: KeyPair) -> ID:
    return ID.from_pubkey(key_pair.public_key)


def _create(path: Path) -> KeyPair:
    path.parent.mkdir(parents=True, exist_ok=True)
    key_pair = create_new_key_pair()
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, KEY_FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        f.write(key_pair.private_key.serialize())
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, path)
    return key_pair
