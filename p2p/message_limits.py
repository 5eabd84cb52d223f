"""The caps every wire message is checked against (`p2p.messages`): sizes of strings, lists and frames.

Plain constants, apart from the messages, so settings that are bounded by them (a node's held-filter size)
can be read without loading the wire's validation code.
"""

from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB
MAX_NEIGHBOURS = 256
MAX_ADDRS_PER_PEER = 8
MAX_ADDR_LEN = 256
MAX_ANNOUNCED_TOPICS = 64
MAX_TOPIC_LEN = 128
MAX_SESSION_LEN = 64
MAX_RESULTS = 500
MAX_URL_LEN = 2048
MAX_TITLE_LEN = 512
MAX_PREVIEW_LEN = 2048
MAX_FINGERPRINT_LEN = 128
MAX_DOC_ID_LEN = 256
MAX_TRAINING_DOCS = 20_000
MAX_FEATURES = 1 << 24
MAX_ROWS = 256
MAX_CONFIG_KEYS = 32
MAX_CONFIG_STR = 256
MAX_CONFIG_LIST = 64
MAX_EXTRA_KEYS = 32
MAX_EXTRA_LIST = 1024
MAX_PARTICIPANTS = 256
MAX_REPORT_ENTRIES = 1024
MAX_META_MEMBERS = MAX_ROWS
MAX_REASON_LEN = 256
MAX_VERSION = (1 << 53) - 1
MAX_CURSOR = (1 << 63) - 1
MAX_ABS_FLOAT = 1e12
MAX_HELD_FILTER_BYTES = 64 * KIB
MAX_HELD_HASHES = 16
SIGNATURE_LEN = 64
MODEL_KINDS = ("linear", "centroids", "meta")
META_PHASES = ("estimate", "build")
