"""Recording: choose a sampler, launch the program with the runtime, collect counters."""
