"""The graph stage (asset group "graph"): entity graph upkeep, Leiden communities, and the store that
writes communities, profiles and the RAPTOR tree."""
