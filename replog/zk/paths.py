"""The ZooKeeper layout (DESIGN §7). Every znode path replog uses is built here."""

BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CLUSTER_ID = "/cluster/id"
CONFIG_TOPICS = "/config/topics"
ADMIN_DELETE_TOPICS = "/admin/delete_topics"
ADMIN_REASSIGN_PARTITIONS = "/admin/reassign_partitions"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
# The states the controller's latest write changed, set in the same multi (replog's own znode).
PARTITION_STATE_NOTIFICATION = "/partition_state_notification"

# ACLs as Kafka stored them (DESIGN §18): literal patterns under ACLS/<ResourceType>/<name>,
# prefixed ones under ACLS_EXTENDED/prefixed/<ResourceType>/<name>; each change adds a
# sequential znode under the matching changes path.
ACLS = "/kafka-acl"
ACLS_EXTENDED = "/kafka-acl-extended"
ACL_CHANGES = "/kafka-acl-changes"
ACL_EXTENDED_CHANGES = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX = "acl_changes_"

# Quotas as Kafka stored them: CONFIG_USERS/<user> and CONFIG_CLIENTS/<client id>, each
# {"version":1,"config":{...}}; each change adds a sequential znode under CONFIG_CHANGES.
CONFIG_USERS = "/config/users"
CONFIG_CLIENTS = "/config/clients"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"

# Created once by whichever process gets there first; never deleted.
PERSISTENT_ROOTS = (BROKER_IDS, BROKER_TOPICS, CONFIG_TOPICS, ADMIN_DELETE_TOPICS, "/cluster",
                    PARTITION_STATE_NOTIFICATION)


def broker(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic(name: str) -> str:
    return f"{BROKER_TOPICS}/{name}"


def topic_partitions(name: str) -> str:
    return f"{BROKER_TOPICS}/{name}/partitions"


def partition(topic_name: str, partition_index: int) -> str:
    return f"{topic_partitions(topic_name)}/{partition_index}"


def partition_state(topic_name: str, partition_index: int) -> str:
    return f"{partition(topic_name, partition_index)}/state"


def topic_config(name: str) -> str:
    return f"{CONFIG_TOPICS}/{name}"


def topic_deletion(name: str) -> str:
    return f"{ADMIN_DELETE_TOPICS}/{name}"
