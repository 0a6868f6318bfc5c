from tests.chart.values_reference import DOC, rewritten


def test_the_values_reference_in_the_docs_is_generated_from_the_current_schema():
    assert DOC.read_text() == rewritten(DOC.read_text()), "run: python -m tests.chart.values_reference"
