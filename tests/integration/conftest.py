import pytest

from replog.client import Admin
from tests.integration.cluster import SHARED_ZOOKEEPER, LocalCluster, client_certificate, started, started_tls


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A running cluster of 3 brokers and 2 controllers, shared by one test module."""
    yield from started(tmp_path_factory, "cluster", "--brokers", "3", "--controllers", "2")


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory):
    """The address of a real ZooKeeper (the suite's), for in-process tests that give each scenario a
    chroot of its own."""
    return SHARED_ZOOKEEPER.address


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    """A `--tls` cluster (mTLS everywhere, bearer tokens signed with TOKEN_SECRET taken), shared by one module."""
    yield from started_tls(tmp_path_factory, "tls")


@pytest.fixture(scope="module")
def tls_client(tls_cluster, tmp_path_factory):
    """A client certificate of tls_cluster's CA (CN=client): CertificateFiles(certfile, keyfile, cafile)."""
    return client_certificate(tls_cluster, str(tmp_path_factory.mktemp("client")), "client")


@pytest.fixture
def new_cluster(tmp_path):
    """A data dir for a test that starts (and breaks) its own cluster; always torn down."""
    local = LocalCluster(str(tmp_path / "data"))
    yield local
    local.down(kill=True)


@pytest.fixture(scope="module")
def bootstrap(cluster):
    """The address of the module's cluster's metadata service, where clients start."""
    return cluster.status()["metadata"][0]["address"]


@pytest.fixture(scope="module")
def admin(bootstrap):
    with Admin(bootstrap) as client:
        yield client
