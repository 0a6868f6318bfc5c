import sys

from replog.rpc.transport import choose_transport

choose_transport()  # before grpc is imported

from replog.metadata.service import SETTINGS, MetadataProcess  # noqa: E402
from replog.rpc.process import main  # noqa: E402

sys.exit(main("metadata", SETTINGS, MetadataProcess, "listeners"))
