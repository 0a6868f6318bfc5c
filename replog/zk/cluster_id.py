"""The cluster's id, as Kafka's /cluster/id."""

from __future__ import annotations

import json
import uuid

from kazoo.exceptions import NodeExistsError

from replog.zk import paths
from replog.zk.session import ZkSession


async def cluster_id(session: ZkSession) -> str:
    """The cluster's id, created by the first process that asks."""
    candidate = json.dumps({"version": "1", "id": uuid.uuid4().hex[:22]}).encode()
    try:
        await session.call(session.client.create_async, paths.CLUSTER_ID, candidate)
    except NodeExistsError:
        pass
    data, _ = await session.call(session.client.get_async, paths.CLUSTER_ID)
    return json.loads(data)["id"]
