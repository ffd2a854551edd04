import pytest


@pytest.fixture(scope="session")
def ray_cluster():
    """A real Ray cluster of two nodes on this machine (Ray's own cluster
    utilities: a head and a second raylet), one CPU each."""
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1}, connect=False)
    try:
        c.add_node(num_cpus=1)
        c.wait_for_nodes()
        yield c
    finally:
        c.shutdown()
