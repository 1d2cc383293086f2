"""Settings and trust: what the user chose, layer by layer, and which workspaces may choose more.

:mod:`.config` merges the layers (embedded defaults < the user's
``config.toml`` < the workspace's ``.cairn/config.toml`` < the editor's
options) field by field, each bad option an ``E_CONFIG_INVALID`` warning and
the layer below used; :mod:`.trust` keeps the user's files (their settings,
the list of trusted workspaces). Depends on :mod:`protocol` and :mod:`state`
only: no other worker domain.
"""
