"""The simulated web: real web corpora served on loopback, one host per site, with injectable faults."""

from simnet.web.child import SubprocessWeb, serve_web_in_subprocess
from simnet.web.corpus import Site, WebCorpus, load_web
from simnet.web.errors import CorpusError, FaultSpecError, PortError, WebError
from simnet.web.faults import FAULT_KINDS, Fault, FaultPlan, parse_fault
from simnet.web.layout import RequestRecord, WebLayout
from simnet.web.server import ServedWeb, serve_web

__all__ = [
    "FAULT_KINDS",
    "CorpusError",
    "Fault",
    "FaultPlan",
    "FaultSpecError",
    "PortError",
    "RequestRecord",
    "ServedWeb",
    "Site",
    "SubprocessWeb",
    "WebCorpus",
    "WebError",
    "WebLayout",
    "load_web",
    "parse_fault",
    "serve_web",
    "serve_web_in_subprocess",
]
