"""The `replog` data source: `spark.dataSource.register(ReplogDataSource)`, then `format("replog")`."""

from __future__ import annotations

import logging

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from replog.spark.arrow import arrow_schema, spark_schema
from replog.spark.offsets import check_reachable
from replog.spark.options import OptionError, SinkOptions, sink_options, source_options, wants_headers
from replog.spark.reader import ReplogBatchReader, ReplogStreamReader
from replog.spark.writer import Columns, ReplogBatchWriter, ReplogStreamWriter, sink_columns

log = logging.getLogger("replog.spark")


class ReplogDataSource(DataSource):
    """Reads and writes replog topics with spark-sql-kafka's options and row schema (docs/SPARK.md)."""

    @classmethod
    def name(cls) -> str:
        return "replog"

    def schema(self) -> str:
        return spark_schema(wants_headers(self.options))

    def reader(self, schema: StructType) -> ReplogBatchReader:
        options = source_options(self.options, streaming=False)
        _check_schema(schema, options.include_headers)
        log.info("reading %s from %s over %s", options.subscription, options.bootstrap, options.security)
        return ReplogBatchReader(options)

    def streamReader(self, schema: StructType) -> ReplogStreamReader:
        options = source_options(self.options, streaming=True)
        _check_schema(schema, options.include_headers)
        log.info("streaming %s from %s over %s", options.subscription, options.bootstrap, options.security)
        return ReplogStreamReader(options)

    def writer(self, schema: StructType, overwrite: bool) -> ReplogBatchWriter:
        return ReplogBatchWriter(*_planned_write(self.options, schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> ReplogStreamWriter:
        return ReplogStreamWriter(*_planned_write(self.options, schema, overwrite))


def _planned_write(given, schema: StructType, overwrite: bool) -> tuple[SinkOptions, Columns]:
    """A write's options and columns, checked, and the cluster reached, before any task starts."""
    options = sink_options(given)
    _refuse_overwrite(overwrite)
    columns = sink_columns(schema, options)
    check_reachable(options.bootstrap, options.security)
    log.info("writing to %s over %s", options.bootstrap, options.security)
    return options, columns


def _check_schema(schema: StructType, include_headers: bool) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    if not to_arrow_schema(schema, timezone="UTC").equals(arrow_schema(include_headers)):
        raise OptionError(f"replog rows have a fixed schema, {spark_schema(include_headers)}; drop the "
                          f".schema(...) given ({schema.simpleString()})")


def _refuse_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise OptionError("a replog topic is append-only; write with mode(\"append\")")
