import sys

from replog.rpc.transport import choose_transport

choose_transport()  # before grpc is imported

from replog.broker.service import SETTINGS, BrokerProcess  # noqa: E402
from replog.rpc.process import main  # noqa: E402

sys.exit(main("broker", SETTINGS, BrokerProcess, "listeners"))
