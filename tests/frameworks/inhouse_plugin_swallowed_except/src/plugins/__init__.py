# importing a plugin module registers its hooks
from plugins import fraud_recall, throughput  # noqa: F401
