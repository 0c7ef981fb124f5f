"""The objtier trace format: reader (columnar, numpy/pyarrow) and writer."""

from objtier.trace.reader import ProcessInfo, Trace, open_trace
from objtier.trace.writer import TraceWriter

__all__ = ["open_trace", "Trace", "ProcessInfo", "TraceWriter"]
