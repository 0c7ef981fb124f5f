"""The objtier trace format: reader (columnar, numpy/pyarrow) and writer.

The names are imported on first use, so that a module of the package that needs neither numpy
nor pyarrow (objtier.trace.light) can be imported without them."""

__all__ = ["open_trace", "Trace", "ProcessInfo", "TraceWriter"]


def __getattr__(name: str):
    if name in ("open_trace", "Trace", "ProcessInfo"):
        from objtier.trace import reader

        return getattr(reader, name)
    if name == "TraceWriter":
        from objtier.trace.writer import TraceWriter

        return TraceWriter
    raise AttributeError(f"module 'objtier.trace' has no attribute {name!r}")
