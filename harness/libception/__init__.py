"""libception: the Python side of the project (the `libception` command,
server and cgroup control, benchmark scenarios, plots)."""
