"""Memory tiers: NUMA nodes (fast/slow node sets, detection in numa_topology) and swap tiers."""
