import sys

from replog.controller.service import SETTINGS, ControllerProcess
from replog.rpc.process import main

sys.exit(main("controller", SETTINGS, ControllerProcess, "listeners"))
