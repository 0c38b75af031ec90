"""Running checks against real targets (I/O): commands, HTTP, ports, disks, files."""
