"""Exact access profiles: compiler-instrumented builds (`objtier cc` / `objtier c++`), the
calling-context tree written by the runtime's trace sampler, phase merging, and the accuracy
of sampled profiles against the exact one."""
