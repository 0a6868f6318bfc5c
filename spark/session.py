"""A SparkSession with the `replog` format registered, for jobs, tests and benchmarks."""

from __future__ import annotations

import os
import sys

LOCAL_MASTER = "local[2]"
# Spark's 200 shuffle partitions are made for clusters; on a laptop each costs a task per stage.
DEFAULTS = {"spark.sql.shuffle.partitions": "4", "spark.ui.showConsoleProgress": "false"}


def replog_session(app_name: str, *, master: str | None = None, configs: dict[str, str] | None = None):
    """getOrCreate() a session (local[2] unless `master` or spark-submit says otherwise) and
    register the replog data source in it.

    Spark starts Python workers with `python3` from PATH unless told otherwise; they must run
    the interpreter that has replog installed, so PYSPARK_PYTHON defaults to this one.
    """
    from pyspark.sql import SparkSession

    from replog.spark.source import ReplogDataSource

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).config("spark.ui.enabled", "false")
    if master is not None:
        builder = builder.master(master)
    elif "spark.master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", "") and not os.environ.get("SPARK_HOME"):
        builder = builder.master(LOCAL_MASTER)
    for name, value in {**DEFAULTS, **(configs or {})}.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.dataSource.register(ReplogDataSource)
    return spark
