"""Benchmark scenarios of `libception bench`, one module each.

A scenario module has a docstring (first line: its summary), and
  settings(quick) -> dict      everything that determines its numbers
  steps(settings) -> int       how many probes to expect (for the ETA)
  run(rig, settings) -> int    measure (skipping points already in the
                               results), print the table, write the plots
"""
import importlib

SCENARIOS = ["demo", "servers", "ablation", "sweep", "latency", "twodisks", "diff",
             "chunking", "fastdisk", "sizing", "tune", "compare"]


def load(name):
    return importlib.import_module(f"libception.bench.{name}")


def summary(name):
    doc = load(name).__doc__ or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""
