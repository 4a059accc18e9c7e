"""The Spark job of `fencepost analyze`.

1. Every run's history.jsonl and final.jsonl to Parquet (`parquet/history`,
   `parquet/final`, one row per line, the run's id beside it), read by Spark itself.
2. Every run loaded as `fencepost check` loads it (one task per run) into a header and
   one payload per partition, written to `parquet/partitions`.
3. The partitions read back and checked, one group per (run, topic, partition), by
   `applyInPandas` with `checkers.check_partition` (checks.py).
4. On the driver, each run's verdict from its header and its partitions' reports.

`local[*]` by default; `--master` takes any Spark master URL, where the workers have
fencepost installed and OUT and the run directories are on storage they all read.
"""
from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable

from harness.analysis.checks import RunVerdict, check_payload, judge, split_run

HISTORY_FIELDS = (("index", "long"), ("time", "long"), ("process", "string"), ("type", "string"),
                  ("f", "string"), ("value", "string"), ("error", "string"))
FINAL_FIELDS = (("kind", "string"), ("node", "string"), ("topic", "string"), ("partition", "integer"),
                ("offset", "long"), ("value", "string"), ("leader_epoch", "integer"), ("log_end_offset", "long"),
                ("high_watermark", "long"), ("complete", "boolean"))
CHECKED_SCHEMA = "run_id string, topic string, partition int, report binary, detected long"


def spark_session(master: str | None):
    """A session for the job; in local mode bound to loopback only."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.appName("fencepost-analyze").master(master or "local[*]")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.shuffle.partitions", str(max(2, os.cpu_count() or 2))))
    if not master or master.startswith("local"):
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # local mode talks over loopback only
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    return builder.getOrCreate()


def run_job(spark, runs: list[tuple[str, Path]], out: Path,
            say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)) -> list[RunVerdict]:
    from pyspark.sql import functions as F

    parquet = out / "parquet"
    paths = spark.createDataFrame([(str(d.resolve()), run_id) for run_id, d in runs], "dir string, run_id string")
    for name, fields in (("history", HISTORY_FIELDS), ("final", FINAL_FIELDS)):
        files = [str((d / f"{name}.jsonl").resolve()) for _, d in runs if (d / f"{name}.jsonl").is_file()]
        say(f"analyze: {name}.jsonl of {len(files)} runs to {parquet / name}")
        if not files:
            continue
        schema = ", ".join(f"{n} {t}" for n, t in fields)
        lines = (spark.read.schema(schema).json(files)
                 .withColumn("dir", F.regexp_extract(F.regexp_replace(F.input_file_name(), "^file:/+", "/"),
                                                     r"^(.*)/[^/]+$", 1)))
        lines.join(F.broadcast(paths), "dir").drop("dir").write.mode("overwrite").parquet(str(parquet / name))

    say(f"analyze: loading {len(runs)} runs into per-partition inputs ({parquet / 'partitions'})")
    split = spark.sparkContext.parallelize([(r, str(d)) for r, d in runs], max(1, len(runs)))
    (spark.createDataFrame(split.flatMap(lambda run: split_run(*run)),
                           "run_id string, topic string, partition int, payload binary")
     .write.mode("overwrite").parquet(str(parquet / "partitions")))
    partitions = spark.read.parquet(str(parquet / "partitions"))

    say("analyze: checking every partition (applyInPandas)")
    checked = (partitions.filter(F.col("partition") >= 0)
               .groupBy("run_id", "topic", "partition").applyInPandas(_check_group, CHECKED_SCHEMA)
               .collect())
    headers = {row.run_id: bytes(row.payload) for row in partitions.filter(F.col("partition") < 0).collect()}
    by_run: dict[str, list[tuple[bytes, int | None]]] = {run_id: [] for run_id in headers}
    for row in sorted(checked, key=lambda r: (r.run_id, r.topic, r.partition)):
        by_run[row.run_id].append((bytes(row.report), None if row.detected is None else int(row.detected)))
    return [replace(judge(run_id, headers[run_id], by_run[run_id]), run_dir=str(run_dir))
            for run_id, run_dir in runs if run_id in headers]


def _check_group(frame):
    """applyInPandas: the rows of one (run, topic, partition): its payload, checked."""
    import pandas as pd

    row = frame.iloc[0]
    report, detected = check_payload(bytes(row["payload"]))
    return pd.DataFrame({"run_id": [row["run_id"]], "topic": [row["topic"]], "partition": [int(row["partition"])],
                         "report": [report], "detected": pd.array([detected], dtype="Int64")})
