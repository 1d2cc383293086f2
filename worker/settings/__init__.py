"""Settings and trust: what the user chose, layer by layer, and which workspaces may choose more.

:mod:`.config` merges the layers (embedded defaults < the user's
``config.toml`` < the workspace's ``.cairn/config.toml`` < the editor's
options) field by field, each bad option an ``E_CONFIG_INVALID`` warning and
the layer below used; :mod:`.trust` keeps the user's files (their settings,
the list of trusted workspaces); :mod:`.detect` finds the digest providers
already on the machine and checks the configured one (``cairn setup``,
``cairn doctor``); :mod:`.userconfig` writes the provider keys into the
user's ``config.toml``, with the user's consent only. Depends on
:mod:`protocol` and :mod:`state` only: no other worker domain.
"""
