"""cairn worker layer."""
