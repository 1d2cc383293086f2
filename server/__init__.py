"""cairn server layer."""
