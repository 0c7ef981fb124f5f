"""`objtier sweep`: how sensitive a program, and each of its objects, is to slower memory.

    metric.py     the seed's metric (baseline, T90/T75/T50, bootstrap intervals): pure
    levels.py     parsing level lists ("100,90,80", "100:10:-10")
    knobs.py      one class per knob (local, threads, bandit, mba, slow-share, sim)
    fom.py        the figure of merit of one run (FOM line, --fom REGEX, --time)
    output.py     sweep.json, sweep.csv/.parquet, the terminal table
    runner.py     the sweep: levels x repeats, interleaved, written after every run
"""
