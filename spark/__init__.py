"""replog as a PySpark data source: `spark.dataSource.register(ReplogDataSource)`, `format("replog")`.

Batch and streaming reads and writes with spark-sql-kafka's options and row schema, routed
through the metadata service straight to the partition leaders (docs/SPARK.md).
"""

from replog.rpc.transport import keep_grpc_out_of_forks

keep_grpc_out_of_forks()  # before grpc is imported: PySpark forks this process to start its JVM

from replog.spark.source import ReplogDataSource  # noqa: E402


def register(spark) -> None:
    """Make `format("replog")` available in a SparkSession."""
    spark.dataSource.register(ReplogDataSource)


__all__ = ["ReplogDataSource", "register"]
