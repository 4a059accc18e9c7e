"""The Spark job of `fencepost analyze`: one group per run, through `applyInPandas`.

The DataFrame holds one row per run (its id, directory and number); grouped by run, each
group is handed to a Python worker, which
1. copies the run's history.jsonl and final.jsonl to Parquet (`OUT/parquet/history/`,
   `OUT/parquet/final/`, one file per run, one row per line, the run's id beside it: see
   parquet.py), for Spark SQL over the campaign afterwards;
2. loads the run as `fencepost check` loads it, once (grouping operations into partitions
   needs the whole history), and checks each partition with `checkers.check_partition`;
3. returns a header row and one report row per partition (checks.py).
On the driver, each run's verdict is decided from its header and its partitions' reports.

A task per run (adaptive coalescing off), so that runs spread over every core and the
progress bar counts runs. `local[*]` by default; `--master` takes any Spark master URL,
where the workers have fencepost installed and OUT and the run directories are on storage
they all read.
"""
from __future__ import annotations

import gc
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable

from fencepost.harness.analysis.checks import RunVerdict, check_run_rows, judge

CHECKED_SCHEMA = "run_id string, topic string, partition int, payload binary, detected long"
PARQUET_TABLES = ("history", "final")


def spark_session(master: str | None, settings: dict[str, str] | None = None):
    """A session for the job, with `settings` (Spark configuration) on top of ours; in local
    mode bound to loopback only."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.appName("fencepost-analyze").master(master or "local[*]")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.adaptive.coalescePartitions.enabled", "false"))
    if not master or master.startswith("local"):
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # local mode talks over loopback only
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    for key, value in (settings or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def run_job(spark, runs: list[tuple[str, Path]], out: Path,
            say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)) -> list[RunVerdict]:
    parquet = (out / "parquet").resolve()
    for table in PARQUET_TABLES:  # this analysis's copies only, never an earlier one's
        shutil.rmtree(parquet / table, ignore_errors=True)
    say(f"analyze: checking {len(runs)} runs on {spark.sparkContext.master}; Parquet copies in {parquet}")
    spark.conf.set("spark.sql.shuffle.partitions", str(max(1, len(runs))))
    frame = spark.createDataFrame([(run_id, str(d.resolve()), number, str(parquet))
                                   for number, (run_id, d) in enumerate(runs)],
                                  "run_id string, dir string, number int, parquet string")
    checked = frame.groupBy("run_id").applyInPandas(_check_group, CHECKED_SCHEMA).collect()
    headers = {row.run_id: bytes(row.payload) for row in checked if row.partition < 0}
    by_run: dict[str, list[tuple[bytes, int | None]]] = {run_id: [] for run_id in headers}
    for row in sorted((r for r in checked if r.partition >= 0), key=lambda r: (r.run_id, r.topic, r.partition)):
        by_run[row.run_id].append((bytes(row.payload), None if row.detected is None else int(row.detected)))
    return [replace(judge(run_id, headers[run_id], by_run[run_id]), run_dir=str(run_dir))
            for run_id, run_dir in runs if run_id in headers]


def _check_group(frame):
    """applyInPandas: one run's row in, its header and partition rows out."""
    import pandas as pd

    from fencepost.harness.analysis.parquet import copy_final, copy_history

    run = frame.iloc[0]
    run_dir, parquet = Path(run["dir"]), Path(run["parquet"])
    part = f"part-{int(run['number']):05d}.parquet"
    was_enabled = gc.isenabled()
    gc.disable()  # parsing builds hundreds of thousands of objects and frees them all at once
    try:
        for table, name in ((copy_history, "history"), (copy_final, "final")):
            source = run_dir / f"{name}.jsonl"
            if source.is_file():
                table(source, parquet / name / part, run["run_id"])
        rows = check_run_rows(run["run_id"], run_dir)
    finally:
        if was_enabled:
            gc.enable()
    columns = list(zip(*rows))
    return pd.DataFrame({"run_id": columns[0], "topic": columns[1], "partition": pd.array(columns[2], dtype="int32"),
                         "payload": columns[3], "detected": pd.array(columns[4], dtype="Int64")})
