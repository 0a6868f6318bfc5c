import sys

from replog.metadata.service import SETTINGS, MetadataProcess
from replog.rpc.process import main

sys.exit(main("metadata", SETTINGS, MetadataProcess, "listeners"))
