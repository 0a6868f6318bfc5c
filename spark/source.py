"""The `replog` data source: `spark.dataSource.register(ReplogDataSource)`, then `format("replog")`."""

from __future__ import annotations

import logging
from dataclasses import replace

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from replog.spark.arrow import arrow_schema, spark_schema
from replog.spark.offsets import check_write_target
from replog.spark.options import (
    OptionError,
    SinkOptions,
    SourceOptions,
    sink_options,
    source_options,
    wants_headers,
)
from replog.spark.reader import (
    RefusedStreamReader,
    ReplogBatchReader,
    ReplogFilteringBatchReader,
    ReplogStreamReader,
)
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
        options = _with_columns(source_options(self.options, streaming=False), schema)
        log.info("reading %s from %s over %s", options.subscription, options.bootstrap, options.security)
        return ReplogFilteringBatchReader(options) if options.push_filters else ReplogBatchReader(options)

    def streamReader(self, schema: StructType) -> ReplogStreamReader | RefusedStreamReader:
        try:
            options = _with_columns(source_options(self.options, streaming=True), schema)
        except OptionError as error:
            return RefusedStreamReader(error)
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
    check_write_target(options.bootstrap, options.security, options.topic)
    log.info("writing to %s over %s", options.bootstrap, options.security)
    return options, columns


def _with_columns(options: SourceOptions, schema: StructType) -> SourceOptions:
    """The options with the columns a read's schema asks for: the whole row schema (the default), or
    some of its columns, named as in it and of its types, in any order (`.schema("value binary")`), so
    that only those are handed to Spark."""
    from pyspark.sql.pandas.types import to_arrow_schema

    full = arrow_schema(options.include_headers)
    given = to_arrow_schema(schema, timezone="UTC")
    if given.equals(full):
        return options
    for field in given:
        index = full.get_field_index(field.name)
        if index < 0 or not full.field(index).equals(field):
            headers = "" if options.include_headers else ' (headers with .option("includeHeaders", "true"))'
            picked = f"{field.name} {schema[field.name].dataType.simpleString()}"
            raise OptionError(f"a replog read's .schema(...) picks columns of its rows, "
                              f"{spark_schema(options.include_headers)}{headers}, by name and type; {picked} is not "
                              f"one (given: {schema.simpleString()})")
    if len(set(given.names)) != len(given.names) or not given.names:
        raise OptionError(f"a replog read's .schema(...) names each column it picks once, and at least one "
                          f"(given: {schema.simpleString()})")
    return replace(options, columns=tuple(given.names))


def _refuse_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise OptionError("a replog topic is append-only; write with mode(\"append\")")
