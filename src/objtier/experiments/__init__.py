"""Experiments: a program run many times under controlled memory, measured arm against arm.

    compare_swap.py  `compare --tier swap`: kernel reclaim vs a plan, in a memory cgroup
    compare_numa.py  `compare --tier numa`: kernel NUMA tiering vs a plan, in the test guest
    measure.py       one measured run (wall, rusage, FOM line, swap counters)
    results.py       per-run rows, medians, ratios, survival
    chart.py         the comparison chart
    numa_hotcold.py  the guest tests' hot/cold program
"""
