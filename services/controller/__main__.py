import sys

from replog.rpc.transport import choose_transport

choose_transport()  # before grpc is imported

from replog.controller.service import SETTINGS, ControllerProcess  # noqa: E402
from replog.rpc.process import main  # noqa: E402

sys.exit(main("controller", SETTINGS, ControllerProcess, "listeners"))
