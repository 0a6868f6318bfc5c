"""replog as a PySpark data source: `spark.dataSource.register(ReplogDataSource)`, `format("replog")`.

Batch and streaming reads and writes with spark-sql-kafka's options and row schema, routed
through the metadata service straight to the partition leaders (docs/SPARK.md).
"""

from replog.spark.source import ReplogDataSource


def register(spark) -> None:
    """Make `format("replog")` available in a SparkSession."""
    spark.dataSource.register(ReplogDataSource)


__all__ = ["ReplogDataSource", "register"]
