"""The dashboards preview: each line drawn is named in its panel's legend as Grafana would name it."""

from __future__ import annotations

from replog.monitoring import preview


def test_the_legend_names_the_internal_topics_series_too():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots()
    result = [{"metric": {"topic": topic, "partition": "0"}, "values": [[100, "1"], [160, "2"]]}
              for topic in ("__transaction_state", "orders")]
    preview._lines(axes, {"title": "Last stable offset lag"}, [(result, "{{topic}}-{{partition}}")], 0, 200)
    pyplot.close(figure)
    assert [text.get_text() for text in axes.get_legend().get_texts()] == ["__transaction_state-0", "orders-0"]
