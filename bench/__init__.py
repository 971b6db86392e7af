"""skift's benchmark harness: ``python -m bench`` (``make bench``, ``make bench-full``).

Every scenario runs against PostgreSQL (``SKIFT_TEST_DSN`` when set, else a
throwaway embedded cluster) in a scratch database of its own, created for the
scenario and dropped after it, so nothing touches any other database on the
server. Baselines (pgqueuer, pgbench, a naive in-process Ready) run in the
same invocation, so results read as ratios that survive a noisy machine.
See docs/benchmarks.md for what each scenario measures and the latest run.
"""
