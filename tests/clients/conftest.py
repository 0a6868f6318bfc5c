from tests.integration.conftest import admin, bootstrap, cluster  # noqa: F401  (a real cluster per module)
