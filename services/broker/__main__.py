import sys

from replog.broker.service import SETTINGS, BrokerProcess
from replog.rpc.process import main

sys.exit(main("broker", SETTINGS, BrokerProcess, "listeners"))
